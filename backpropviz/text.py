"""The IR as text: one line per value, in the spirit of autodidax (``e = mul(d, c)  data -9``)."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .formatting import format_number
from .ir import operand_edges
from .names import value_names

__all__ = ["to_text"]

# An array of at most this many numbers is written out; a larger one by its
# shape and its smallest and largest entries.
SMALL = 8


def to_text(G: nx.MultiDiGraph, precision: int = 4) -> str:
    """The IR as lines of text: its leaves first (inputs, parameters, constants), then each
    op's result as ``name = op(operands)``, with its data and gradient; then where backward
    started, the order it processed the ops, and the graph's notes.

    Values are named as the figures name them (a label, else the script's name, else the
    expression that made them); a name two values share gets their ids (``h#v3``). Numbers
    have ``precision`` significant digits. The text depends on the graph alone, so it is
    the same on every run: short enough to paste in a bug report, exact enough for a test.
    """
    names = _unique_names(G)
    leaves, made = [], []
    for node in nx.topological_sort(G):
        attrs = G.nodes[node]
        if attrs["kind"] != "value":
            continue
        producers = list(G.predecessors(node))
        if producers:
            made.append((producers[0], names[node], _call(G, producers[0], names), attrs))
        else:
            leaves.append((None, names[node], attrs["role"], attrs))
    rows = [(f"{name} = {rhs}", _numbers(attrs["data"], precision),
             "" if attrs.get("grad") is None else _numbers(attrs["grad"], precision),
             _dead(G, node)) for node, name, rhs, attrs in (*leaves, *made)]
    width = max(len(left) for left, *_ in rows)
    data_width = max(len(data) for _, data, *_ in rows)
    lines = [(f"{left:<{width}}   data {data:<{data_width}}" + (f"   grad {grad}" if grad else "")
              + dead).rstrip() for left, data, grad, dead in rows]
    seeds = G.graph.get("seeds") or {}
    if seeds:
        started = ", ".join(f"{names[value]} (seed {_numbers(seed, precision)})"
                            for value, seed in seeds.items() if value in names)
        lines.append(f"# backward from {started}")
    order = G.graph.get("backward_order") or []
    if order:
        lines.append("# backward order: " + ", ".join(
            names[next(iter(G.successors(op)))] for op in order))
    lines += [f"# note: {note}" for note in (*G.graph.get("notes", ()),
                                              *G.graph.get("remarks", ()))]
    return "\n".join(lines) + "\n"


def _unique_names(G: nx.MultiDiGraph) -> dict[Any, str]:
    """Each value's name as drawn, with its id where another value has the same name
    (but for an unnamed scalar constant: its number is all there is to say of it)."""
    names = {node: name.text for node, name in value_names(G).items()}
    count: dict[str, int] = {}
    for name in names.values():
        count[name] = count.get(name, 0) + 1

    def number(node: Any) -> bool:
        attrs = G.nodes[node]
        return attrs.get("role") == "const" and not attrs.get("label") and not attrs["shape"]

    return {node: name if count[name] == 1 or number(node) else f"{name}#{node}"
            for node, name in names.items()}


def _dead(G: nx.MultiDiGraph, op: Any) -> str:
    """How many entries an op's gate blocked (a dead ReLU, dropout), if any."""
    if op is None or G.nodes[op].get("dead") is None:
        return ""
    dead = np.asarray(G.nodes[op]["dead"], dtype=bool)
    return f"   dead {int(dead.sum())} of {dead.size}" if dead.any() else ""


def _call(G: nx.MultiDiGraph, op: Any, names: dict[Any, str]) -> str:
    """An op applied to its operands: ``mul(d, c)``, ``pow(a, 2)``, ``sum(x, axis=0)``."""
    attrs = G.nodes[op]
    name = attrs["symbol"] if attrs["op"] == ops.GROUP.name else attrs["op"]
    args = [names[u] for u, _, _ in operand_edges(G, op)]
    if attrs.get("exponent") is not None:
        args.append(format_number(attrs["exponent"]))
    for keyword in ("axis", "p"):
        given = attrs.get(keyword)
        if isinstance(given, tuple):  # axes: (0, 2)
            args.append(f"{keyword}=({', '.join(map(str, given))}{',' * (len(given) == 1)})")
        elif given is not None:
            args.append(f"{keyword}={format_number(given)}")
    if attrs.get("keepdims"):
        args.append("keepdims=True")
    return f"{name}({', '.join(args)})"


def _numbers(x: Any, precision: int) -> str:
    """A number, or an array by its shape and (if small) its entries: ``[2x2] [[1, 2], [3, 4]]``."""
    array = np.asarray(x, dtype=np.float64)
    if array.ndim == 0:
        return format_number(float(array), precision)
    shape = "x".join(map(str, array.shape))
    if array.size <= SMALL:
        return f"[{shape}] {_nested(array.tolist(), precision)}"
    return (f"[{shape}] min {format_number(array.min(), precision)} "
            f"max {format_number(array.max(), precision)}")


def _nested(x: Any, precision: int) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_nested(item, precision) for item in x) + "]"
    return format_number(x, precision)
