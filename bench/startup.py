"""Benchmark the command line's start: ``--version`` and ``--help`` against ``import numpy``.

Run with ``.venv/bin/python bench/startup.py`` (``--repeats N`` for more
rounds). The anchor is a bare ``python -c "import numpy"``, the least any
tool that computes with numpy pays to start. In the same rounds, taken in
turn so the machine's load falls on all alike: ``backpropviz --version``
(answered without loading the package: it should cost about a bare
interpreter), ``backpropviz --help`` (the parser, which names the front
end's defaults, so numpy and networkx load; manim, torch and the renderers
do not) and, for scale, ``python -c pass``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

CLI = Path(sys.executable).with_name("backpropviz")
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import numpy (anchor)": [sys.executable, "-c", "import numpy"],
    "backpropviz --version": [str(CLI), "--version"],
    "backpropviz --help": [str(CLI), "--help"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeats + 1):  # the first round warms the caches, not counted
        for name, command in COMMANDS.items():
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            times[name].append(time.perf_counter() - start)
    anchor = statistics.median(times["import numpy (anchor)"][1:])
    print(f"{'command':<24} {'median ms':>10} {'x anchor':>9}")
    for name, runs in times.items():
        median = statistics.median(runs[1:])
        print(f"{name:<24} {median * 1000:>10.1f} {median / anchor:>9.2f}")


if __name__ == "__main__":
    main()
