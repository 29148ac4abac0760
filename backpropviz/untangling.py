"""Untangling dot's layout: where it crosses two edges, a few hints tried, the best kept."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import networkx as nx

from .crossings import crossing_edges
from .dot import EDGE_LABEL_NODES, DotOptions, Writer, folded
from .graphviz import layout_json
from .steps import state_at
from .style import BOOK

__all__ = ["untangled"]

Hint = tuple[frozenset[str], tuple[tuple[str, str], ...]]


def untangled(G: nx.MultiDiGraph, options: DotOptions) -> DotOptions:
    """``options`` with what undoes the crossings of dot's layout of ``G``, where a
    hint tried does: the ops of the crossing edges let take their operands in any
    order (a matrix product's ``W @ h`` need not have W above h), and with that one
    of the two inputs those edges start from ranked after the other (two inputs that
    each feed two sums cannot be drawn side by side without a crossing; one a rank
    on, between the other's edges, they can). dot's layout is the one the picture
    is drawn or pinned from (a folded picture's rows, the book's left-to-right
    draft). Unchanged if it crosses nothing, or no hint crosses less. A folding is
    tried last with what untangled the graph laid out whole.
    """
    if options.free_order or options.ranked_after or G.number_of_nodes() > EDGE_LABEL_NODES \
            or nx.is_forest(G.to_undirected(as_view=True)):
        return options  # (dot lays a tree out without a crossing: no layout to look at)
    # (the draft placement.py pins a picture from; dot's own layout, as to_dot writes
    # it: the same text, so that its layout is made once)
    draft = replace(options, step=None)
    if options.rankdir == BOOK:
        draft = replace(draft, rankdir="LR", frame=None, wrap=1)
    elif folded(options):
        draft = replace(draft, frame=None)
    found = _crossings(G, draft)
    hints = list(_hints(G, found))
    if found and folded(options):
        whole = untangled(G, replace(options, wrap=1))
        hints.append((whole.free_order, whole.ranked_after))
    best, fewest = options, len(found)
    for free, after in hints:
        if not (free or after):
            continue
        count = len(_crossings(G, replace(draft, free_order=free, ranked_after=after)))
        if count < fewest:
            best, fewest = replace(options, free_order=free, ranked_after=after), count
            if not count:
                break
    return best


def _crossings(G: nx.MultiDiGraph, options: DotOptions) -> list:
    draft = Writer(G, options, state_at(G, None)).dot()
    return crossing_edges(layout_json(draft))


def _hints(G: nx.MultiDiGraph, found: list) -> Iterator[Hint]:
    """What is tried against the crossings ``found``, in order."""
    if not found:
        return
    ends = [_ends(name) for a, b, _ in found for name in (a, b)]
    free = frozenset(node for pair in ends for node in pair
                     if node in G and G.nodes[node]["kind"] == "op")
    yield free, ()
    first, second = (_ends(name)[0] for name in found[0][:2])
    if first != second and all(_is_input(G, node) for node in (first, second)):
        yield free, ((first, second),)
        yield free, ((second, first),)


def _ends(edge: str) -> tuple[str, str]:
    """The IR nodes an edge of the drawing runs between, from its id: ``"v1->op1#1/out"``
    (a piece of the edge through a badge, or to a row's end) is ``("v1", "op1")``."""
    tail, _, rest = edge.partition("->")
    return tail, rest.split("#", 1)[0]


def _is_input(G: nx.MultiDiGraph, node: Any) -> bool:
    """A value nothing computes (ranking it later moves nothing before it)."""
    return node in G and G.nodes[node]["kind"] == "value" and not G.in_degree(node)

