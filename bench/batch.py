"""Benchmark many figures at once: every example, one process per script against one call.

Run with ``.venv/bin/python bench/batch.py`` (``--repeats N`` for more rounds).
The anchor is what a Makefile does today: ``backpropviz render EXAMPLE -o
EXAMPLE.svg``, one process per example, one after another. Against it, in the
same rounds (taken in turn, so that the machine's load falls on both alike):

(a) one call drawing them all one at a time (``-j 1``): the interpreter and
    the imports (numpy, networkx, torch for the PyTorch example) paid once;
(b) one call with a job per core (``-j`` default): also in parallel.

Each round starts from an empty folder; the figures are compared byte for
byte with the anchor's, so that the speed is not bought with other pictures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).with_name("backpropviz")


def examples() -> list[Path]:
    """Every example script that draws (the capstone's student_value.py is a module)."""
    return sorted(path for path in (ROOT / "examples").rglob("*.py")
                  if path.name != "student_value.py")


def one_process_each(scripts: list[Path], folder: Path) -> None:
    for script in scripts:
        subprocess.run([str(CLI), "render", str(script), "-o", str(folder / f"{script.stem}.svg")],
                       check=True, capture_output=True)


def one_call(scripts: list[Path], folder: Path, jobs: int | None) -> None:
    subprocess.run([str(CLI), "render", *map(str, scripts), "-o", f"{folder}/",
                    *(["-j", str(jobs)] if jobs else [])], check=True, capture_output=True)


def timed(run, folder: Path) -> float:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    start = time.perf_counter()
    run(folder)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    scripts = examples()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{len(scripts)} examples: {', '.join(s.stem for s in scripts)}; {cores} cores")
    ways = {
        "one process per script": lambda f: one_process_each(scripts, f),
        "(a) one call, -j 1": lambda f: one_call(scripts, f, 1),
        f"(b) one call, -j {cores} (default)": lambda f: one_call(scripts, f, None),
    }
    with tempfile.TemporaryDirectory() as scratch:
        folders = {name: Path(scratch) / f"run{index}" for index, name in enumerate(ways)}
        for name, run in ways.items():  # warm up: caches, fonts, .pyc files
            timed(run, folders[name])
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.repeats):
            for name, run in ways.items():
                times[name].append(timed(run, folders[name]))
        anchor_folder = folders["one process per script"]
        for name, folder in folders.items():
            for script in scripts:
                same = (folder / f"{script.stem}.svg").read_bytes() == (
                    anchor_folder / f"{script.stem}.svg").read_bytes()
                if not same:
                    raise SystemExit(f"{name} drew {script.name} differently")
    anchor = times["one process per script"]
    print(f"medians of {args.repeats} rounds (wall seconds), ratio to the anchor in the "
          "same round, median:")
    for name, measured in times.items():
        ratio = statistics.median(m / a for m, a in zip(measured, anchor, strict=True))
        print(f"  {name:<34} {statistics.median(measured):6.2f} s   {ratio:.2f}x")


if __name__ == "__main__":
    main()
