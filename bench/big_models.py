"""Benchmark big models: a ResNet-18 (one 224x224 image) drawn at module level, against anchors.

Run with ``.venv/bin/python bench/big_models.py`` (``--repeats N`` for more
rounds, ``--page-limit S`` to stop the page sooner). bench/scripts/resnet18.py
is torchvision's ResNet-18 written out (torchvision is not needed). Each row
is ``backpropviz render`` through the command line, in a child process, and
is given as wall and CPU seconds and as ratios to two anchors timed in the
same rounds:

- ``python resnet18.py``: the script itself, torch's own forward and backward
  (with torch's import, which the command line pays too);
- bare ``dot -Tsvg`` on the DOT we emit for that row, the floor of any
  graphviz drawing.

Targets (issue 25): the ``--modules`` SVG in <= 10 s, its page in <= 20 s;
torchview draws a ResNet-18 in 2.9 s, torchviz in 2.4 s, TorchLens in 7 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "scripts" / "resnet18.py"
ROWS = [("--modules SVG", ["--modules"], "svg"), ("--depth 1 SVG", ["--depth", "1"], "svg"),
        ("--depth 2 SVG", ["--depth", "2"], "svg"), ("--modules page", ["--modules"], "html")]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command: list[str], limit: float | None = None) -> tuple[float | None, float]:
    """Wall seconds (None past ``limit``) and CPU seconds of a child process."""
    before, start = _children_cpu(), time.perf_counter()
    try:
        subprocess.run(command, check=True, capture_output=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return None, _children_cpu() - before
    return time.perf_counter() - start, _children_cpu() - before


def render(flags: list[str], out: Path, limit: float | None) -> list[str]:
    return [sys.executable, "-m", "backpropviz", "render", str(SCRIPT), *flags, "-o", str(out),
            "--timeout", str(limit or 600)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--page-limit", type=float, default=300,
                        help="seconds after which the page's render is stopped")
    args = parser.parse_args()
    env_note = f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        dots = {}
        for name, flags, _ in ROWS:  # the DOT of each row, for bare dot
            dots[name] = work / f"{len(dots)}.dot"
            subprocess.run(render(flags, dots[name], None), check=True, capture_output=True)
        times: dict[str, list[tuple[float | None, float]]] = {}
        for _ in range(args.repeats):
            rounds = [("python resnet18.py", [sys.executable, str(SCRIPT)], None)]
            for name, flags, kind in ROWS:
                limit = args.page_limit if kind == "html" else None
                rounds.append((name, render(flags, work / f"out.{kind}", limit), limit))
                rounds.append((f"bare dot, {name}", ["dot", "-Tsvg", str(dots[name]),
                                                     "-o", str(work / "bare.svg")], None))
            for name, command, limit in rounds:
                times.setdefault(name, []).append(run(command, limit))
    print(f"ResNet-18, one 224x224 image; medians of {args.repeats} rounds {env_note}")
    script_wall = [wall for wall, _ in times["python resnet18.py"]]
    script_cpu = [cpu for _, cpu in times["python resnet18.py"]]
    print(f"  anchor python resnet18.py (forward + backward): {statistics.median(script_wall):.1f} "
          f"s wall, {statistics.median(script_cpu):.1f} s CPU")
    print(f"  {'row':<16} {'wall':>8} {'CPU':>7} {'÷ script':>9} {'bare dot':>9} {'÷ dot':>7}")
    for name, _, _ in ROWS:
        walls = [wall for wall, _ in times[name]]
        cpus = [cpu for _, cpu in times[name]]
        bare = [wall for wall, _ in times[f"bare dot, {name}"]]
        if any(wall is None for wall in walls):
            print(f"  {name:<16} {'> ' + format(args.page_limit, 'g') + ' s':>8} "
                  f"{statistics.median(cpus):>6.1f}s")
            continue
        over_script = statistics.median(w / s for w, s in zip(walls, script_wall, strict=True))
        over_dot = statistics.median(w / d for w, d in zip(walls, bare, strict=True))
        print(f"  {name:<16} {statistics.median(walls):>7.1f}s {statistics.median(cpus):>6.1f}s "
              f"{over_script:>8.1f}x {statistics.median(bare):>8.2f}s {over_dot:>6.1f}x")


if __name__ == "__main__":
    main()
