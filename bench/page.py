"""Benchmark the step-through page and ``--steps`` against the SVG of the same script.

Run with ``.venv/bin/python bench/page.py`` (``--repeats N`` for more rounds,
``--checkout DIR`` to measure another checkout of backpropviz, e.g. main, in the
same way). Each row is the command line run on one script, taken in turn with
its anchor, ``backpropviz render SCRIPT -o figure.svg``, so the machine's load
falls on both alike; the best of the rounds is kept:

- the page (``-o page.html``) of a backprop-ninja-style script
  (bench/scripts/backprop_ninja.py: 40 values, batch norm and the
  cross-entropy written out by hand), in time and in bytes; targets <= 2x and
  <= 3x its SVG;
- the page of examples/mlp3.py, target <= 2x;
- ``--steps DIR`` of a GRU cell over four inputs (bench/scripts/gru_steps.py,
  one SVG per backward step), target <= 3x one SVG;
- the pages of an RNN unrolled 50 steps (bench/scripts/rnn_unrolled.py) and
  of a transformer block with two attention heads
  (bench/scripts/transformer_block.py), targets <= 2x their SVGs;
- the backprop-ninja page opened in Chromium (until its load event, the page's
  script run), against its SVG opened the same way;
- a step of the pages of the ninja script and of the 50-step RNN in Chromium (the
  next key pressed, to the frame painted; the mean of 15 steps from step 1, the
  view following the step where the drawing is too small to read whole), against
  opening their SVGs: a step should cost a small part of laying the drawing out.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHROMIUM = Path("/usr/bin/chromium")
NINJA = HERE / "scripts" / "backprop_ninja.py"
ROWS = [  # what, script, what is made, target, the script's environment
    ("page of a backprop-ninja script", NINJA, ["-o", "page.html"], 2.0, {}),
    ("page of mlp3", ROOT / "examples" / "mlp3.py", ["-o", "page.html"], 2.0, {}),
    ("--steps of a GRU cell over 4 inputs", HERE / "scripts" / "gru_steps.py",
     ["--steps", "steps"], 3.0, {}),
    ("page of an RNN unrolled 50 steps", HERE / "scripts" / "rnn_unrolled.py",
     ["-o", "page.html"], 2.0, {"STEPS": "50"}),
    ("page of a transformer block (2 heads)", HERE / "scripts" / "transformer_block.py",
     ["-o", "page.html"], 2.0, {}),
]


class RenderError(Exception):
    """The command line failed (its message says why)."""


def render(checkout: Path, script: Path, made: list[str], folder: Path,
           extra_env: dict[str, str] | None = None) -> float:
    """Seconds the command line takes to make ``made`` from ``script``."""
    env = {**os.environ, **(extra_env or {}), "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "backpropviz", "render", str(script), *made],
                          cwd=folder, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RenderError(f"backpropviz render {script.name} {' '.join(made)} failed: "
                     f"{done.stderr.strip()}")
    return time.perf_counter() - start


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size


def load_times(files: list[Path], repeats: int) -> list[float]:
    """The best time Chromium takes to open each file, to its load event (ms)."""
    from playwright.sync_api import sync_playwright

    best = [float("inf")] * len(files)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                             args=["--no-sandbox", "--disable-gpu"])
        for _ in range(repeats):
            for index, path in enumerate(files):
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                start = time.perf_counter()
                page.goto(path.as_uri(), wait_until="load")
                best[index] = min(best[index], (time.perf_counter() - start) * 1000)
                page.close()
        browser.close()
    return best


def step_times(pages: list[tuple[Path, Path]], repeats: int, steps: int = 15) -> list[tuple]:
    """For each (page, its SVG): the best mean time of a step of the page in Chromium,
    and the best time to open the SVG (ms)."""
    from playwright.sync_api import sync_playwright

    painted = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
    best = [[float("inf"), float("inf")] for _ in pages]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                             args=["--no-sandbox", "--disable-gpu"])
        for _ in range(repeats):
            for index, (html, svg) in enumerate(pages):
                page = browser.new_page(viewport={"width": 1280, "height": 720},
                                        reduced_motion="reduce")  # (a jump, not a glide)
                page.goto(html.as_uri(), wait_until="load")
                page.keyboard.press("ArrowRight")
                page.evaluate(painted)
                start = time.perf_counter()
                for _ in range(steps):
                    page.keyboard.press("ArrowRight")
                    page.evaluate(painted)
                step = (time.perf_counter() - start) * 1000 / steps
                page.close()
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                start = time.perf_counter()
                page.goto(svg.as_uri(), wait_until="load")
                page.evaluate(painted)
                opened = (time.perf_counter() - start) * 1000
                page.close()
                best[index] = [min(best[index][0], step), min(best[index][1], opened)]
        browser.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--checkout", type=Path, default=ROOT,
                        help="the backpropviz checkout to measure (default: this one)")
    parser.add_argument("--rows", default="1,2,3,4,5,6,7",
                        help="which rows to measure (1-5: the table's, 6-7: Chromium's)")
    args = parser.parse_args()
    rows = {int(n) for n in args.rows.split(",")}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        print(f"backpropviz at {args.checkout}, best of {args.repeats}")
        print(f"{'what':40} {'time':>8} {'its SVG':>8} {'ratio':>6} {'target':>7}"
              f" {'bytes':>10} {'ratio':>6}")
        for number, (what, script, made, target, extra_env) in enumerate(ROWS, start=1):
            if number not in rows:
                continue
            times, anchors = [], []
            try:
                for _ in range(args.repeats):
                    anchors.append(render(args.checkout, script, ["-o", "figure.svg"], folder,
                                          extra_env))
                    times.append(render(args.checkout, script, made, folder, extra_env))
            except RenderError as failure:
                print(f"{what:40} {failure}", flush=True)
                continue
            ours, anchor = min(times), min(anchors)
            out = folder / made[1]
            made_bytes = size(out)
            line = (f"{what:40} {ours:7.2f}s {anchor:7.2f}s {ours / anchor:5.2f}x "
                    f"{target:6.1f}x {made_bytes:10,}")
            if out.is_file():
                line += f" {made_bytes / size(folder / 'figure.svg'):5.2f}x"
            print(line, flush=True)
        if CHROMIUM.exists() and 6 in rows:
            render(args.checkout, NINJA, ["-o", "ninja.html"], folder)
            render(args.checkout, NINJA, ["-o", "ninja.svg"], folder)
            page, svg = load_times([folder / "ninja.html", folder / "ninja.svg"],
                                   max(args.repeats, 3))
            print(f"{'the ninja page opened in Chromium':40} {page:6.0f}ms {svg:6.0f}ms "
                  f"{page / svg:5.2f}x")
        if CHROMIUM.exists() and 7 in rows:
            rnn = {"STEPS": "50"}
            render(args.checkout, NINJA, ["-o", "ninja.html"], folder)
            render(args.checkout, NINJA, ["-o", "ninja.svg"], folder)
            render(args.checkout, ROWS[3][1], ["-o", "rnn.html"], folder, rnn)
            render(args.checkout, ROWS[3][1], ["-o", "rnn.svg"], folder, rnn)
            measured = step_times([(folder / "ninja.html", folder / "ninja.svg"),
                                   (folder / "rnn.html", folder / "rnn.svg")],
                                  max(args.repeats, 3))
            for what, (step, opened) in zip(["ninja", "50-step RNN"], measured, strict=True):
                print(f"{'a step of the ' + what + ' page':40} {step:6.0f}ms {opened:6.0f}ms "
                      f"{step / opened:5.2f}x")


if __name__ == "__main__":
    main()
