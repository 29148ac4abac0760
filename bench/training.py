"""Benchmark recording a training loop (render --iterations), against the same script run plainly.

Run with ``.venv/bin/python bench/training.py`` (``--passes 200``). For a loop of
the engine (the book's MLP, examples/training_loop.py run longer) and, where torch
is installed, an ``nn.Sequential`` with SGD, it times in one process: the script
run as python runs it (the anchor), the script read as ``render`` reads it (its
last pass drawn: the watch, PyTorch's capture), and the run recorded with
``--iterations 10`` and with ``--iterations 10 --every 20``. It prints each as a
ratio to the anchor: what keeping passes costs on top of what render costs already.
"""

from __future__ import annotations

import argparse
import runpy
import tempfile
import time
from pathlib import Path

from backpropviz.options import Options
from backpropviz.script import graph_of_script
from backpropviz.train_record import record_training

ROOT = Path(__file__).resolve().parent.parent

TORCH_LOOP = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
X = torch.randn(16, 2)
y = torch.randn(16, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(PASSES):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(X), y)
    loss.backward()
    optimizer.step()
"""


def _best(run, repeat: int = 3) -> float:
    """The shortest of ``repeat`` timings of ``run()``, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def _scripts(folder: Path, passes: int) -> dict[str, Path]:
    engine = (ROOT / "examples" / "training_loop.py").read_text()
    engine = engine.replace("range(5)", f"range({passes})").replace(
        '    print(f"step {step}: L = {L.item():.4f}")\n', "")
    scripts = {"engine (book's MLP)": engine}
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        scripts["torch (nn.Sequential, SGD)"] = TORCH_LOOP.replace("PASSES", str(passes))
    paths = {}
    for i, (name, source) in enumerate(scripts.items()):
        paths[name] = folder / f"loop{i}.py"
        paths[name].write_text(source)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=200, help="backward passes per loop")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for name, path in _scripts(Path(folder), args.passes).items():
            anchor = _best(lambda path=path: runpy.run_path(str(path), run_name="__main__"))
            timings = {
                "render (last pass)": lambda path=path: graph_of_script(path, quiet=True),
                "--iterations 10": lambda path=path: record_training(
                    path, Options(iterations=10), quiet=True),
                "--iterations 10 --every 20": lambda path=path: record_training(
                    path, Options(iterations=10, every=20), quiet=True),
            }
            print(f"{name}, {args.passes} passes: plain run {anchor * 1000:.0f} ms")
            for label, run in timings.items():
                print(f"  {label:28s} {_best(run) / anchor:6.2f} x the plain run")


if __name__ == "__main__":
    main()
