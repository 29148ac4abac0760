"""Benchmark rolled loops: a PyTorch RNN unrolled 300 steps, drawn rolled, against its anchors.

Run with ``.venv/bin/python bench/rolled.py`` (``--repeats N``, ``--steps N``).
The script is ``bench/scripts/rnn_unrolled.py``; unrolled it is refused (its
weights' edges span the whole loop), so ``render`` draws it rolled by itself.
Measured in one run, each a median of ``--repeats`` wall times:

(a) ``backpropviz render`` to SVG through the command line (a fresh process:
    the script, torch, the IR, finding the loop, the drawing), against the same
    command on the loop unrolled over 10 steps (drawn as it is), and the same
    with ``--roll`` given;
(b) in the library, the IR already built: finding the loop (``find_loop``) and
    rolling it, drawing the rolled SVG, and bare ``dot -Tsvg`` on its DOT, the
    floor of any graphviz drawing of it;
(c) the step-through page of the rolled loop (``-o .html``) against its SVG;
(d) the clip of the rolled loop (``-o .mp4``, 480p, once), in seconds of rendering per
    second of clip, against the clip of the loop unrolled over 3 steps (which is drawn
    as it is): the rolled clip sweeps one block and a closing step, so it should cost
    what any clip of its length does.

The issue's target (issue 25): the 300-step RNN drawn in at most 10 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "scripts" / "rnn_unrolled.py"


def wall(function: Callable[[], object], repeats: int) -> float:
    """The median wall seconds of ``function``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cli(out: Path, steps: int, *flags: str) -> Callable[[], None]:
    """``backpropviz render`` of the RNN script over ``steps`` steps, as a function."""
    def run() -> None:
        subprocess.run([sys.executable, "-m", "backpropviz", "render", str(SCRIPT), "-o",
                        str(out), *flags], check=True, capture_output=True,
                       env={**os.environ, "STEPS": str(steps)})
    return run


def clip_length(path: Path) -> float:
    """A clip's length in seconds, read from the file."""
    import av

    with av.open(str(path)) as movie:
        return movie.duration / av.time_base


def bare_dot(source: str) -> None:
    subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    from backpropviz import render
    from backpropviz.errors import Note
    from backpropviz.rolling import find_loop, rolled
    from backpropviz.script import graph_of_script

    warnings.simplefilter("ignore", Note)  # (what the drawing says of itself)

    steps, repeats = args.steps, args.repeats
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        rolled_cli = wall(cli(out / "rolled.svg", steps), repeats)
        asked_cli = wall(cli(out / "asked.svg", steps, "--roll"), repeats)
        short_cli = wall(cli(out / "short.svg", 10), repeats)
        page_cli = wall(cli(out / "rolled.html", steps), repeats)
        clips = {}
        for name, count in (("rolled", steps), ("unrolled", 3)):
            clips[name] = wall(cli(out / f"{name}.mp4", count), 1), clip_length(
                out / f"{name}.mp4")
        os.environ["STEPS"] = str(steps)
        G = graph_of_script(SCRIPT, quiet=True)
        found = wall(lambda: rolled(G, find_loop(G)), repeats)
        H = rolled(G, find_loop(G))
        source = render(H, "dot").decode()
        drawing = wall(lambda: render(H, "svg"), repeats)
        floor = wall(lambda: bare_dot(source), repeats)
    print(f"a PyTorch RNN unrolled {steps} steps ({G.number_of_nodes()} IR nodes), drawn rolled "
          f"({H.number_of_nodes()} nodes); wall seconds, medians of {repeats}:")
    print(f"(a) render to SVG, CLI: {rolled_cli:.2f} s (target <= 10 s); with --roll "
          f"{asked_cli:.2f} s; the 10-step loop unrolled {short_cli:.2f} s: "
          f"ratio {rolled_cli / short_cli:.2f}x")
    print(f"(b) library, IR built: find_loop + rolled {found * 1000:.0f} ms; the rolled SVG "
          f"{drawing:.2f} s; bare dot on its DOT {floor:.2f} s: ratio {drawing / floor:.2f}x")
    print(f"(c) the rolled page, CLI: {page_cli:.2f} s; its SVG {rolled_cli:.2f} s: "
          f"ratio {page_cli / rolled_cli:.2f}x")
    (rolled_s, rolled_len), (short_s, short_len) = clips["rolled"], clips["unrolled"]
    print(f"(d) the rolled clip, CLI, 480p: {rolled_s:.1f} s for {rolled_len:.1f} s of clip "
          f"({rolled_s / rolled_len:.2f} s/s); the 3-step loop unrolled {short_s:.1f} s for "
          f"{short_len:.1f} s ({short_s / short_len:.2f} s/s): ratio "
          f"{(rolled_s / rolled_len) / (short_s / short_len):.2f}x")


if __name__ == "__main__":
    main()
