"""Benchmark the scalar engine against micrograd, and a million-node chain backward.

Run with ``.venv/bin/python bench/engine.py`` (``--repeats N`` for more tries).
The training step is micrograd's demo: an MLP 2-16-16-1 built from Values, a
batch of 100 two-moons points, SVM hinge loss plus 1e-4 L2, forward and
backward. The same model code runs with either Value class.

The step is timed with its result (the loss, and through it the graph) held
until the timer stops, for both engines: micrograd's graph is a cycle of
closures that its step never frees, so dropping the result inside the timer
would charge backpropviz alone for freeing a graph. The figures with the
result dropped inside are printed too, and the freeing on its own.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import math
import random
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from backpropviz import Value


def make_moons(n: int, noise: float, seed: int) -> tuple[list[list[float]], list[int]]:
    """Two interleaving half circles with labels -1 and +1 (a seeded generator)."""
    rng = random.Random(seed)
    points, labels = [], []
    for i in range(n):
        t = math.pi * rng.random()
        if i % 2 == 0:  # the upper moon
            x, y, label = math.cos(t), math.sin(t), -1
        else:  # the lower moon, shifted right and down
            x, y, label = 1.0 - math.cos(t), 0.5 - math.sin(t), 1
        points.append([x + rng.gauss(0, noise), y + rng.gauss(0, noise)])
        labels.append(label)
    return points, labels


def make_mlp(value: Callable[[float], Any], sizes: list[int], seed: int) -> list:
    """Layers of neurons; a neuron is (weights, bias). Weights are uniform in [-1, 1]."""
    rng = random.Random(seed)
    return [[([value(rng.uniform(-1, 1)) for _ in range(n_in)], value(0.0))
             for _ in range(n_out)]
            for n_in, n_out in itertools.pairwise(sizes)]


def parameters(mlp: list) -> list:
    return [p for layer in mlp for weights, bias in layer for p in (*weights, bias)]


def forward(mlp: list, x: list) -> Any:
    """ReLU after every layer but the last, which is linear."""
    for depth, layer in enumerate(mlp):
        last = depth == len(mlp) - 1
        outputs = []
        for weights, bias in layer:
            activation = sum((w * xi for w, xi in zip(weights, x, strict=True)), bias)
            outputs.append(activation if last else activation.relu())
        x = outputs
    return x[0]


def loss_of(value: Callable[[float], Any], mlp: list, X: list, y: list) -> Any:
    """The forward pass: SVM hinge loss over the batch plus 1e-4 L2."""
    inputs = [[value(c) for c in row] for row in X]
    scores = [forward(mlp, row) for row in inputs]
    losses = [(1 + -yi * score).relu() for yi, score in zip(y, scores, strict=True)]
    data_loss = sum(losses) * (1.0 / len(losses))
    reg_loss = 1e-4 * sum(p * p for p in parameters(mlp))
    return data_loss + reg_loss


def training_step(value: Callable[[float], Any], mlp: list, X: list, y: list) -> Any:
    """Forward, zero the parameters' gradients, backward."""
    total = loss_of(value, mlp, X, y)
    for p in parameters(mlp):
        p.grad = 0.0
    total.backward()
    return total


def best_times(functions: dict[str, Callable[[], Any]], repeats: int, collect_garbage: bool,
               hold_result: bool = True) -> dict[str, float]:
    """The fastest of ``repeats`` runs of each function, with the cycle collector on or off.

    On is how a script runs; off (timeit's convention) times the interpreter
    work alone. The functions take turns, so a busy machine slows them alike,
    and garbage left by the previous run is collected before each run.

    ``hold_result`` keeps what the function returns until the timer has
    stopped, and frees it after. A training step returns its loss, which holds
    the whole graph: backpropviz's graph is acyclic, so dropping the loss
    inside the timer frees it there, by reference counting, while micrograd's
    graph is a cycle of closures that only the collector frees, later, outside
    the timer. Holding the result keeps the freeing out for both engines;
    ``hold_result=False`` times backpropviz's freeing and not micrograd's.
    """
    best = dict.fromkeys(functions, math.inf)
    for _ in range(repeats):
        for name, function in functions.items():
            gc.collect()
            if not collect_garbage:
                gc.disable()
            start = time.perf_counter()
            if hold_result:
                result = function()
                elapsed = time.perf_counter() - start
                del result
            else:
                function()
                elapsed = time.perf_counter() - start
            best[name] = min(best[name], elapsed)
            gc.enable()
    return best


def bench_training_step(repeats: int) -> None:
    try:
        from micrograd.engine import Value as MicrogradValue
    except ImportError:
        raise SystemExit("the comparison needs micrograd: pip install micrograd") from None

    X, y = make_moons(100, noise=0.1, seed=1)
    engines = {"backpropviz": Value, "micrograd": MicrogradValue}
    models = {name: make_mlp(value, [2, 16, 16, 1], seed=1337)
              for name, value in engines.items()}
    losses = {name: training_step(value, models[name], X, y).data
              for name, value in engines.items()}
    grads = {name: [p.grad for p in parameters(model)] for name, model in models.items()}
    disagreement = max(abs(a - b) for a, b in zip(*grads.values(), strict=True))
    print(f"training step (MLP 2-16-16-1, batch 100, hinge + 1e-4 L2, forward + backward; "
          f"backpropviz records its tape), best of {repeats}:")
    for name in engines:
        print(f"  {name:<12} loss {losses[name]:.12f}")
    print(f"  largest difference between the two engines' gradients: {disagreement:.1e}")

    steps = {name: lambda v=value, m=models[name]: training_step(v, m, X, y)
             for name, value in engines.items()}
    # The step's result held until the timer stops (the graph freed after it,
    # for both engines), then dropped inside the timer, as the old figures had it.
    for hold_result, when in ((True, "graph freed after the timer"),
                              (False, "dropped inside: backpropviz's graph freed in the timer, "
                                      "micrograd's later")):
        print(f"  the step's result {when}:")
        for collect_garbage in (True, False):
            times = best_times(steps, repeats, collect_garbage, hold_result)
            ratio = times["backpropviz"] / times["micrograd"]
            print(f"    gc {'on ' if collect_garbage else 'off'}: "
                  f"backpropviz {times['backpropviz'] * 1e3:6.1f} ms, "
                  f"micrograd {times['micrograd'] * 1e3:6.1f} ms, ratio {ratio:.2f}")

    # Where the time goes, gc off: each phase of the step timed on its own.
    phases = {name: phase_times(value, models[name], X, y, repeats)
              for name, value in engines.items()}
    for name in engines:
        print(f"  gc off, {name:<12} " + ", ".join(
            f"{phase} {seconds * 1e3:5.1f} ms" for phase, seconds in phases[name].items()))
    print("  gc off, ratios: " + ", ".join(
        f"{phase} {phases['backpropviz'][phase] / phases['micrograd'][phase]:.2f}"
        for phase in ("forward", "backward", "backward accumulating")))
    print("  (micrograd's graph is a cycle of closures, freed by the garbage collector later, "
          "so it frees nothing within the step)")


def phase_times(value: Callable[[float], Any], mlp: list, X: list, y: list,
                repeats: int) -> dict[str, float]:
    """The fastest of ``repeats`` of each phase of a training step, gc off: the forward
    pass; backward with the parameters' gradients zeroed (as in the step); backward
    adding to the gradients the last pass left; freeing the graph."""
    best = dict.fromkeys(("forward", "backward", "backward accumulating", "freeing the graph"),
                         math.inf)

    def timed(phase: str, function: Callable[[], Any]) -> Any:
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        result = function()
        best[phase] = min(best[phase], time.perf_counter() - start)
        gc.enable()
        return result

    for _ in range(repeats):
        for phase in ("backward", "backward accumulating"):
            total = [timed("forward", lambda: loss_of(value, mlp, X, y))]
            if phase == "backward":
                for p in parameters(mlp):
                    p.grad = 0.0
            timed(phase, total[0].backward)
            timed("freeing the graph", total.clear)
    return best


def build_and_backward(length: int) -> tuple[float, float, Value]:
    """A chain x -> -x -> --x ... of ``length`` ops; the forward and backward times, and x."""
    start = time.perf_counter()
    x = Value(0.5)
    node = x
    for _ in range(length):
        node = -node
    built = time.perf_counter()
    node.backward()
    return built - start, time.perf_counter() - built, x


def bench_chain(length: int) -> None:
    gc.collect()
    forward_time, backward_time, x = build_and_backward(length)
    expected = (-1.0) ** length
    if x.grad != expected:
        raise SystemExit(f"the chain's gradient is {x.grad}, expected {expected}")
    del x
    gc.collect()
    # Measured again under tracemalloc, which slows Python down: the times
    # above are from the untraced run.
    tracemalloc.start()
    build_and_backward(length)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"chain of {length:,} negations ({length + 1:,} nodes): forward {forward_time:.2f} s, "
          f"backward {backward_time:.2f} s, peak memory {peak / 2**20:.0f} MiB "
          f"(tracemalloc, forward and backward)")


def micrograd_deepest_chain(limit: int = 100_000) -> int | None:
    """The longest chain micrograd's recursive sort survives (None: all up to limit)."""
    from micrograd.engine import Value as MicrogradValue

    def survives(length: int) -> bool:
        node = MicrogradValue(0.5)
        for _ in range(length):
            node = -node
        try:
            node.backward()
        except RecursionError:
            return False
        return True

    if survives(limit):
        return None
    low, high = 1, limit  # survives(low), not survives(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if survives(middle) else (low, middle)
    return low


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="timed runs per engine")
    parser.add_argument("--chain", type=int, default=1_000_000, help="length of the chain")
    args = parser.parse_args()
    bench_training_step(args.repeats)
    bench_chain(args.chain)
    deepest = micrograd_deepest_chain()
    print("micrograd on the same chain: " + (
        "no limit found up to 100,000" if deepest is None else
        f"RecursionError beyond {deepest:,} ops (its topological sort recurses)"))


if __name__ == "__main__":
    main()
