"""Benchmark drawing: our SVG against bare ``dot``, micrograd's record-node style, and scale.

Run with ``.venv/bin/python bench/render.py`` (``--repeats N`` for more tries,
``--sizes 100,1000,5000`` for the scaling table). The graph is a scalar MLP
2-16-16-1 (ReLU hidden layers, linear output) on one input and a squared
loss, built from backpropviz Values, about 1,000 values:

(a) ``draw(G).pipe("svg")`` (IR -> DOT -> ``dot -Tsvg``) against ``dot -Tsvg``
    alone on the DOT we emit, the floor for any graphviz drawing; target
    <= 1.1x (issue 25);
(b) the same graph drawn the way micrograd's ``draw_dot`` does it: the
    ``graphviz`` package, one record node per value, for reference;
(c) a scaling table by number of values, to place ``--max-nodes``;
(d) the scripts people bring: micrograd's demo network on one point (its
    337-term L2 sum included) and a PyTorch RNN unrolled over 30, 100 and 300
    steps, through the command line: time to SVG and peak memory, beside bare
    ``dot`` on the same DOT (stopped after ``--dot-limit`` seconds), and bare
    ``dot`` on the DOT the graph would have without folding its sums;
(e) slide figures: the book's objective and a three-layer MLP drawn with
    ``fit="1920x1080"`` (several layouts tried, the best kept) against the
    same graph drawn plainly and bare ``dot`` on its DOT.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import graphviz
import networkx as nx

from backpropviz import Value
from backpropviz.diagram import draw
from backpropviz.figure import to_dot
from backpropviz.ir import to_networkx


def mlp_graph(hidden: list[int], seed: int = 0) -> nx.MultiDiGraph:
    """The IR of one forward and backward pass of a scalar MLP 2-hidden-1."""
    rng = random.Random(seed)
    x = [Value(0.5), Value(-1.5)]
    layer = x
    sizes = [*hidden, 1]
    for depth, width in enumerate(sizes):
        outputs = []
        for _ in range(width):
            weights = [Value(rng.uniform(-1, 1), requires_grad=True) for _ in layer]
            total = Value(0.0, requires_grad=True)  # the bias
            for w, xi in zip(weights, layer, strict=True):
                total = total + w * xi
            outputs.append(total.relu() if depth < len(sizes) - 1 else total)
        layer = outputs
    loss = (layer[0] - 1.0) ** 2
    loss.backward()
    return to_networkx(loss)


def values_of(G: nx.MultiDiGraph) -> int:
    return sum(1 for _, kind in G.nodes(data="kind") if kind == "value")


def hidden_for(target: int) -> list[int]:
    """Two equal hidden layers whose MLP has about ``target`` values."""
    return min(([h, h] for h in range(1, 200)),
               key=lambda hidden: abs(_count(hidden) - target))


def _count(hidden: list[int]) -> int:
    # Per neuron with n inputs: n weights, a bias, n products, n sums, an
    # activation (none on the output); plus the inputs and 3 loss values.
    total, fan_in = 2, 2
    for width in hidden:
        total += width * (3 * fan_in + 2)
        fan_in = width
    return total + 3 * fan_in + 1 + 3


def timed(function: Callable[[], object], repeats: int) -> tuple[float, float]:
    """The median wall time and CPU time (ours plus child processes') of ``repeats`` calls.

    CPU time is the steadier figure on a shared machine; wall time is what
    a user waits.
    """
    walls, cpus = timed_in_turn([function], repeats)[0]
    return statistics.median(walls), statistics.median(cpus)


def timed_in_turn(functions: list[Callable[[], object]],
                  repeats: int) -> list[tuple[list[float], list[float]]]:
    """The wall and CPU times of ``repeats`` rounds in which each function runs once.

    Taking turns exposes the functions alike to the load of a shared machine
    as it comes and goes: the ratio of two times of one round holds better
    than either time does.
    """
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in functions]
    for _ in range(repeats):
        for function, (walls, cpus) in zip(functions, times, strict=True):
            before = _cpu()
            start = time.perf_counter()
            function()
            walls.append(time.perf_counter() - start)
            cpus.append(_cpu() - before)
    return times


def median_ratio(numerators: list[float], denominators: list[float]) -> float:
    return statistics.median(n / d for n, d in zip(numerators, denominators, strict=True))


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def bare_dot(source: str) -> bytes:
    return subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True,
                          check=True).stdout


def micrograd_style(G: nx.MultiDiGraph) -> graphviz.Digraph:
    """micrograd's draw_dot look: a record per value (label | data | grad), ops as ovals."""
    dot = graphviz.Digraph(format="svg", graph_attr={"rankdir": "LR"})
    for node, attrs in G.nodes(data=True):
        if attrs["kind"] == "value":
            label = attrs["label"] or ""
            dot.node(node, label=f"{{ {label} | data {attrs['data']:.4f} | "
                                 f"grad {attrs['grad']:.4f} }}", shape="record")
        else:
            dot.node(node, label=attrs["symbol"])
    for u, v in G.edges():
        dot.edge(u, v)
    return dot


SCRIPTS = Path(__file__).resolve().parent / "scripts"

# Runs the command line in a child and reports its peak memory (RSS of the
# child and of the dot it starts).
_MEASURED = textwrap.dedent("""
    import resource, sys
    from backpropviz.cli import main
    status = main(sys.argv[1:])
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
               resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    print(f"PEAK {peak} {status}", file=sys.stderr)
""")


def cli_run(script: Path, out: Path, env: dict) -> tuple[float, int, int, str]:
    """Wall seconds, peak KiB, exit status and last message of ``backpropviz render``."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MEASURED, "render", str(script), "-o", str(out)],
                          capture_output=True, text=True, env={**os.environ, **env})
    wall = time.perf_counter() - start
    peak_line = [line for line in done.stderr.splitlines() if line.startswith("PEAK")][-1]
    _, peak, status = peak_line.split()
    message = next((line for line in done.stderr.splitlines() if "error" in line), "")
    return wall, int(peak), int(status), message


def dot_within(source: str, limit: float) -> float | None:
    """Seconds bare ``dot -Tsvg`` takes on ``source``, or None past ``limit``."""
    start = time.perf_counter()
    try:
        subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True,
                       timeout=limit, check=True)
    except subprocess.TimeoutExpired:
        return None
    return time.perf_counter() - start


def people_scripts(limit: float) -> None:
    print(f"(d) scripts people bring, through the command line (bare dot stopped at {limit:g} s):")
    print(f"    {'script':<22} {'nodes':>6} {'ours':>8} {'peak MiB':>9} {'bare dot':>9} "
          f"{'unfolded, bare dot':>19}")
    from backpropviz.ir import fold_chains
    from backpropviz.script import graph_of_script

    with tempfile.TemporaryDirectory() as folder:
        cases = [("micrograd demo net", SCRIPTS / "micrograd_demo.py", {})] + [
            (f"RNN, {steps} steps", SCRIPTS / "rnn_unrolled.py", {"STEPS": str(steps)})
            for steps in (30, 100, 300)]
        for name, script, env in cases:
            os.environ.update(env)
            G = graph_of_script(script, quiet=True, fold=False)
            folded = fold_chains(G)
            wall, peak, status, message = cli_run(script, Path(folder) / "out.svg", env)
            ours = f"{wall:.1f} s" if status == 0 else f"refused {wall:.1f} s"
            bare = dot_within(to_dot(folded), limit)
            unfolded = dot_within(to_dot(G), limit) if G is not folded else bare
            print(f"    {name:<22} {folded.number_of_nodes():>6} {ours:>8} {peak / 1024:>9.0f} "
                  f"{_seconds(bare, limit):>9} {_seconds(unfolded, limit):>19}")
            if status:
                print(f"      ({message.strip()[:110]}...)")


def cold(function):
    """``function`` run as in a fresh process: the drafts' layouts kept by an earlier
    run (graphviz.layout_json's cache, for a fit, untangling and the drawing) forgotten
    first."""
    from backpropviz.graphviz import layout_json

    def run(*args, **kwargs):
        layout_json.cache_clear()
        return function(*args, **kwargs)
    return run


def slide_figures(repeats: int) -> None:
    from backpropviz.script import graph_of_script

    examples = Path(__file__).resolve().parent.parent / "examples"
    print(f"(e) fitted to 1920x1080, wall seconds (medians of {repeats}; ratio to bare dot):")
    print(f"    {'example':<15} {'bare dot':>9} {'plain':>14} {'--fit':>14}  chosen")
    for name in ("d2l_mlp", "d2l_objective", "mlp3"):
        G = graph_of_script(examples / f"{name}.py", quiet=True)
        source = to_dot(G)
        bare_dot(source)
        walls = timed_in_turn([lambda G=G: cold(draw)(G).pipe("svg"),
                               lambda G=G: cold(draw)(G, fit="1920x1080").pipe("svg"),
                               lambda source=source: bare_dot(source)], repeats)
        plain, fitted, floor = (statistics.median(wall) for wall, _ in walls)
        plain_ratio = median_ratio(walls[0][0], walls[2][0])
        fit_ratio = median_ratio(walls[1][0], walls[2][0])
        chosen = draw(G, fit="1920x1080").fit
        print(f"    {name:<15} {floor:>8.3f}s {plain:>7.3f}s {plain_ratio:>4.1f}x"
              f" {fitted:>7.3f}s {fit_ratio:>4.1f}x  {chosen.rankdir}, "
              f"wrap {chosen.wrap}, numbers {chosen.number_px:.1f} px, "
              f"other text {chosen.text_px:.1f} px, {chosen.crossings} crossings"
              + ("" if chosen.advice is None else " (below a slide's sizes)"))


def _seconds(value: float | None, limit: float) -> str:
    return f"> {limit:g} s" if value is None else f"{value:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dot-limit", type=float, default=120,
                        help="seconds after which bare dot is stopped in (d)")
    parser.add_argument("--sizes", default="100,1000,2000,5000",
                        help="numbers of values for the scaling table")
    parser.add_argument("--slides", action="store_true",
                        help="only (e), the figures fitted to a slide")
    args = parser.parse_args()
    if args.slides:
        slide_figures(args.repeats)
        return

    G = mlp_graph([16, 16])
    print(f"MLP 2-16-16-1 on one input: {values_of(G)} values, "
          f"{G.number_of_nodes() - values_of(G)} ops, {G.number_of_edges()} edges")
    source = to_dot(G)
    # Warm up graphviz (fonts, plugins) before measuring.
    bare_dot(source)
    ours, floor = timed_in_turn([lambda: draw(G).pipe("svg"), lambda: bare_dot(source)],
                                args.repeats)
    emit = timed(lambda: to_dot(G), args.repeats)
    print(f"(a) draw(G).pipe('svg'): {statistics.median(ours[0]):.3f} s wall, "
          f"{statistics.median(ours[1]):.3f} s CPU (medians of {args.repeats})")
    print(f"    bare dot -Tsvg on our DOT: {statistics.median(floor[0]):.3f} s wall, "
          f"{statistics.median(floor[1]):.3f} s CPU")
    print(f"    ratio {median_ratio(ours[0], floor[0]):.2f}x wall, "
          f"{median_ratio(ours[1], floor[1]):.2f}x CPU (median of the rounds' ratios; "
          f"target <= 1.1x); to_dot alone {emit[1] * 1000:.0f} ms CPU")
    record = micrograd_style(G)
    reference = timed(lambda: record.pipe(), args.repeats)
    print(f"(b) micrograd draw_dot style (records, graphviz package): {reference[0]:.3f} s wall, "
          f"{reference[1]:.3f} s CPU")

    tries = max(1, args.repeats // 2)
    print(f"(c) scaling, CPU seconds (median of {tries}):")
    print(f"    {'values':>7} {'graph nodes':>11} {'to_dot':>8} {'dot -Tsvg':>10} "
          f"{'total':>8} {'SVG size':>9}")
    for target in (int(n) for n in args.sizes.split(",")):
        H = mlp_graph(hidden_for(target))
        emit = timed(lambda H=H: to_dot(H), tries)[1]
        text = to_dot(H)
        layout_time = timed(lambda text=text: bare_dot(text), tries)[1]
        size = len(bare_dot(text))
        print(f"    {values_of(H):>7} {H.number_of_nodes():>11} {emit:>7.2f}s "
              f"{layout_time:>9.2f}s {emit + layout_time:>7.2f}s {size / 1e6:>7.1f}MB")
    people_scripts(args.dot_limit)
    slide_figures(args.repeats)


if __name__ == "__main__":
    main()
