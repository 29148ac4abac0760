"""The page's groups that open in place: for each group drawn as one operator, the
drawing of its inside and the backward steps inside it, read from the IR it was closed from.

A view (views.py) closes a group's ops into one op; the page steps through the
view. Opened, the group's op gives way to the drawing of its own ops, and its
one step to theirs. The inside is the IR's own subgraph (the group's ops, the
values they make and the values that enter them), drawn and stepped through by
the page's own writers, so every number it shows is one the engine held: the
running sums on its edges, and, before its first op, the gradients the view's
replay had reached when the group's step began (its result's among them).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import networkx as nx

from . import ops
from .errors import Note
from .graphviz import pieces_past_limit
from .ir import operand_edges, result_of
from .names import differentiated, value_names
from .steps import backward_steps

__all__ = ["MAX_OPENED", "inside", "opened_groups"]

# The most values and ops a group's inside may have to be opened in place. An nn.LSTM
# over 20 steps, closed by --modules, has 651: its inside, drawn, was 168,706 px wide
# and 9.5 MB of a 10 MB page, and laying it out took most of the page's 21 s; over 80
# steps (2,571) dot could not lay it out in a minute, and the page failed with it.
MAX_OPENED = 500


def opened_groups(source: nx.MultiDiGraph, view: nx.MultiDiGraph,
                  page_of: Callable[[nx.MultiDiGraph], dict]) -> dict[str, dict]:
    """For each group op of ``view`` that a backward step processes, keyed by its id:
    its ``name``, the outer ``step`` that processes it, and ``page_of`` its inside
    (the page's data of that subgraph of ``source``: steps, drawing...).

    Nothing is there when ``view`` closed no group of ``source`` (drawn open,
    or no groups at all). A group whose inside is too big to draw in place (more than
    MAX_OPENED values and ops, or more than dot lays out in the time it has) stays
    closed, and a Note says so: the page is made without it.
    """
    if view is source:
        return {}
    replay = backward_steps(view)
    opened = {}
    for step, op in enumerate((done.op for done in replay), start=1):
        if op is None:  # (a rolled loop's closing step)
            continue
        attrs = view.nodes[op]
        if attrs.get("op") != ops.GROUP.name or len(attrs.get("members", ())) < 2:
            continue
        known = replay[step - 2].grads if step > 1 else view.graph.get("seeds", {})
        inner = inside(source, op, attrs["members"], known)
        why = _too_big_to_open(inner)
        if why:
            warnings.warn(f"the page leaves {attrs['symbol']} closed: its inside {why}",
                          Note, stacklevel=2)
            continue
        opened[str(op)] = {"name": attrs["symbol"], "step": step, **page_of(inner)}
    return opened


def _too_big_to_open(inner: nx.MultiDiGraph) -> str | None:
    """Why the inside ``inner`` is not drawn in place (None: it is)."""
    size = inner.number_of_nodes()
    if size > MAX_OPENED:
        return (f"has {size:,} values and ops, more than the {MAX_OPENED:,} a group may have "
                "to open in place")
    pieces = pieces_past_limit(inner)
    return None if pieces is None else (
        f"has edges that span {pieces:,} ranks, more than graphviz lays out in the time "
        "it has (--timeout)")


def inside(source: nx.MultiDiGraph, op: Any, members: list, known: dict) -> nx.MultiDiGraph:
    """The subgraph of ``source`` the ops ``members`` of the group op ``op`` (the id of
    the member that makes the group's result) make: the ops, their
    results and operands, stepped through in ``source``'s backward order from the
    gradients ``known`` when the group's step began (seeds of its own replay)."""
    inner = set(members)
    values = {result_of(source, member) for member in members} | {
        u for member in members for u, _, _ in operand_edges(source, member)}
    # (in the whole graph's order: a subgraph view of a few nodes runs in a set's order,
    # which changes from run to run, and so would the page)
    kept = [node for node in source if node in inner or node in values]
    H = source.__class__()
    H.add_nodes_from((node, dict(source.nodes[node])) for node in kept)
    H.add_edges_from((u, v, k, dict(attrs)) for u in kept for v, keyed in source._succ[u].items()
                     if v in inner or v in values for k, attrs in keyed.items())
    H.graph = dict(source.graph)
    # A value made outside the inside keeps the name it has in the whole graph
    # (linear(x), o − y), not the id an unnamed leaf would be written by.
    names = value_names(source)
    for value in values:
        if not H.nodes[value].get("label") and source._pred[value] and not H._pred[value]:
            H.nodes[value]["label"] = names[value].text
    top = result_of(source, op)
    # Roles as the inside sees them: what it makes, and what enters it from outside.
    H.nodes[top]["role"] = "output"
    for value in values - {top}:
        if H.nodes[value]["role"] == "intermediate" and not H._pred[value]:
            H.nodes[value]["role"] = "input"
    H.graph.update(
        roots=[top], view=True, remarks=[], entered=True,
        differentiated=differentiated(source, names).text,
        backward_order=[done for done in source.graph.get("backward_order", ()) if done in inner],
        seeds={v: grad for v, grad in known.items() if v in values})
    return H
