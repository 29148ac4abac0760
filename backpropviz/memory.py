"""Memory: the bytes the forward pass keeps for the backward pass, step by step, read from the IR.

After each forward op, what is held is every value some op so far will read
in its backward rule (each op's ``saves``: the registry's saved values for
the built-in engines, the tensors autograd really saved for PyTorch, at their
dtype), each value counted once however many rules read it. During the
backward pass a value is released once the last rule that reads it has run.
A rule that never runs (an op the backward pass did not reach) keeps its
values to the end. Nothing is recomputed: the bytes are the producer's
(``nbytes`` on each value; ``inner_bytes`` on an op for what its rule keeps
that is no drawn value: a PyTorch composite's own tensors, or the values
inside a group drawn as one op).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .ir import IRError, operand_edges, result_of
from .names import value_names

__all__ = ["BACKWARD", "FORWARD", "Kept", "MemoryStep", "Timeline", "saved_values", "timeline",
           "to_json", "value_bytes"]

FORWARD, BACKWARD = "forward", "backward"
INNER = "inner"  # the role of tensors autograd keeps inside an op, drawn as no value


@dataclass(frozen=True)
class Kept:
    """One thing kept for backward: a value of the graph, or what an op keeps inside.

    ``saved_by`` are the ops whose backward rules read it, in forward order;
    ``freed_by`` is the op of the backward step after which none is left to
    read it (None: some reader never ran, so it is held to the end).
    """

    id: str
    name: str
    nbytes: int
    role: str  # the value's role (param, input, intermediate, ...), or "inner"
    shape: tuple[int, ...]
    saved_by: tuple[Any, ...]
    freed_by: Any


@dataclass(frozen=True)
class MemoryStep:
    """What is held after one op of the forward pass or one step of the backward pass.

    ``held`` lists what is kept, in the order it was first kept (the bottom
    of the stack first); ``kept`` is what this forward op began to keep,
    ``freed`` what this backward step released.
    """

    index: int  # 1-based, forward steps first
    phase: str  # FORWARD or BACKWARD
    op: Any
    bytes_held: int
    held: tuple[str, ...]
    kept: tuple[str, ...] = ()
    freed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Timeline:
    """The bytes kept for backward through a recorded pass, and what they are."""

    kept: Mapping[str, Kept]  # by id, in the order first kept
    steps: tuple[MemoryStep, ...]
    symbols: Mapping[Any, str]  # op id -> what is drawn in its circle
    results: Mapping[Any, str]  # op id -> the name of the value it made

    @property
    def peak_bytes(self) -> int:
        return max((step.bytes_held for step in self.steps), default=0)

    @property
    def peak(self) -> MemoryStep | None:
        """The first step at which the most is held (None for a graph with no op)."""
        peak = self.peak_bytes
        return next((step for step in self.steps if step.bytes_held == peak), None)

    @property
    def forward(self) -> tuple[MemoryStep, ...]:
        return tuple(step for step in self.steps if step.phase == FORWARD)

    @property
    def backward(self) -> tuple[MemoryStep, ...]:
        return tuple(step for step in self.steps if step.phase == BACKWARD)

    def bytes_by_role(self, step: MemoryStep) -> dict[str, int]:
        """What a step holds, added up by role (parameters, inputs, intermediates, inner)."""
        totals: dict[str, int] = {}
        for item in step.held:
            kept = self.kept[item]
            totals[kept.role] = totals.get(kept.role, 0) + kept.nbytes
        return totals


def saved_values(G: nx.MultiDiGraph, op: Any) -> list[Any]:
    """The values ``op``'s backward rule reads: the producer's record, else the registry's."""
    saves = G.nodes[op].get("saves")
    if saves is not None:
        return list(saves)
    operands = [u for u, _, _ in operand_edges(G, op)]
    return list(dict.fromkeys(result_of(G, op) if where == "out" else operands[where]
                              for where in ops.get(G.nodes[op]["op"]).saved(len(operands))))


def value_bytes(attrs: Mapping) -> int:
    """The bytes a value kept for backward takes: its producer's ``nbytes``, else float64's."""
    nbytes = attrs.get("nbytes")
    if nbytes:
        return int(nbytes)
    return 8 * int(np.prod(attrs.get("shape", ()), dtype=np.int64))  # float64, as the engine


def timeline(G: nx.MultiDiGraph, order: Sequence[Any] | None = None) -> Timeline:
    """The memory timeline of a recorded pass: forward ops in the order they ran, then the
    backward steps in ``backward_order``.

    ``order`` runs the forward ops in another topological order instead (a view
    that plays them so, as the clip does): the same values, kept in that order.
    """
    forward_ops = [node for node, kind in G.nodes(data="kind") if kind == "op"]
    if order is not None:
        if len(order) != len(forward_ops) or set(order) != set(forward_ops):
            raise IRError("the forward order must list every op of the graph once")
        forward_ops = list(order)
    order = G.graph.get("backward_order", [])
    missing = [op for op in order if G.nodes.get(op, {}).get("kind") != "op"]
    if missing:
        raise IRError(f"backward_order names {missing[0]!r}, which is not an op node")
    position = {op: index for index, op in enumerate(order)}
    names = value_names(G)
    readers: dict[str, list] = {}
    facts: dict[str, tuple[str, int, str, tuple]] = {}  # id -> name, bytes, role, shape
    kept_by_op: dict[Any, list[str]] = {}
    for op in forward_ops:
        items = []
        for value in saved_values(G, op):
            attrs = G.nodes[value]
            facts.setdefault(str(value), (names[value].text, value_bytes(attrs), attrs["role"],
                                          tuple(attrs["shape"])))
            items.append(str(value))
        inner = int(G.nodes[op].get("inner_bytes") or 0)
        if inner:
            item = f"{op}:inner"
            facts[item] = (f"inside {G.nodes[op]['symbol']}", inner, INNER, ())
            items.append(item)
        for item in items:
            readers.setdefault(item, []).append(op)
        kept_by_op[op] = items

    freed_by = {item: (max(ops_, key=position.__getitem__)
                       if all(op in position for op in ops_) else None)
                for item, ops_ in readers.items()}
    kept = {item: Kept(item, *facts[item], tuple(readers[item]), freed_by[item])
            for item in readers}

    steps: list[MemoryStep] = []
    held: dict[str, None] = {}
    total = 0
    for op in forward_ops:
        new = [item for item in kept_by_op[op] if item not in held]
        for item in new:
            held[item] = None
            total += kept[item].nbytes
        steps.append(MemoryStep(len(steps) + 1, FORWARD, op, total, tuple(held), kept=tuple(new)))
    released: dict[Any, list[str]] = {}
    for item, op in freed_by.items():
        if op is not None:
            released.setdefault(op, []).append(item)
    for op in order:
        gone = released.get(op, [])
        for item in gone:
            del held[item]
            total -= kept[item].nbytes
        steps.append(MemoryStep(len(steps) + 1, BACKWARD, op, total, tuple(held),
                                freed=tuple(gone)))
    symbols = {op: G.nodes[op]["symbol"] for op in forward_ops}
    results = {op: names[result_of(G, op)].text for op in forward_ops}
    return Timeline(kept, tuple(steps), symbols, results)


def to_json(line: Timeline) -> dict[str, Any]:
    """The timeline as JSON-ready data: ``peak_bytes``, ``steps`` (each with ``phase``,
    ``op``, ``bytes_held``, and what it kept, freed and holds), ``peak`` and ``values``."""
    peak = line.peak
    return {
        "peak_bytes": line.peak_bytes,
        "peak": None if peak is None else {
            "step": peak.index, "phase": peak.phase, "op": str(peak.op),
            "values": list(peak.held)},
        "steps": [{"phase": step.phase, "op": str(step.op), "symbol": line.symbols[step.op],
                   "result": line.results[step.op], "bytes_held": step.bytes_held,
                   "kept": list(step.kept), "freed": list(step.freed), "held": list(step.held)}
                  for step in line.steps],
        "values": {item: {"name": kept.name, "bytes": kept.nbytes, "role": kept.role,
                          "shape": list(kept.shape), "saved_by": [str(op) for op in kept.saved_by],
                          "freed_by": None if kept.freed_by is None else str(kept.freed_by)}
                   for item, kept in line.kept.items()},
    }
