"""Folding a long graph into rows: each node's rank, and where the rows begin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import networkx as nx

__all__ = ["bands", "fold_cuts", "ranks"]


def ranks(G: nx.MultiDiGraph) -> dict[Any, int]:
    """Each node's rank as dot ranks it: its longest path from an input, with
    an input placed just before its first consumer."""
    rank: dict[Any, int] = {}
    order = list(nx.topological_sort(G))
    for node in order:
        rank[node] = max((rank[u] + 1 for u in G._pred[node]), default=0)
    for node in order:
        if not G._pred[node] and G._succ[node]:
            rank[node] = min(rank[v] for v in G._succ[node]) - 1
    return rank


def bands(G: nx.MultiDiGraph, wrap: int | tuple[int, ...]) -> dict[Any, int]:
    """Each node's row when the graph is folded: ``wrap`` is a number of rows (cut
    by fold_cuts) or the ranks where the second, third... rows begin."""
    rank = ranks(G)
    cuts = wrap if isinstance(wrap, tuple) else fold_cuts(G, wrap)
    return {node: sum(r >= cut for cut in cuts) for node, r in rank.items()}


def fold_cuts(G: nx.MultiDiGraph, count: int,
              extent: Mapping[int, tuple[float, float]] | None = None) -> tuple[int, ...]:
    """The ranks where rows begin when the graph is folded into ``count`` rows.

    Rows are of about equal length: in ranks, or along ``extent`` (each rank's
    span along the flow, from a layout of the graph whole). Each cut is moved,
    within a third of a row, to where the fewest edges cross it, an edge into
    an op (a value carried on to the next row) before an op's result.
    """
    rank = ranks(G)
    total = max(rank.values(), default=0) + 1
    if extent is None:
        extent = {r: (float(r), r + 1.0) for r in range(total)}
    cost = [0.0] * (total + 1)
    for u, v in G.edges():
        for c in range(rank[u] + 1, rank[v] + 1):
            cost[c] += 1.0 if G.nodes[u].get("kind") == "value" else 1.5
    first = min(lo for lo, _ in extent.values())
    length = max(hi for _, hi in extent.values()) - first
    cuts: list[int] = []
    for number in range(1, count):
        ideal = first + length * number / count
        window = [c for c in range(max(1, cuts[-1] + 1 if cuts else 1), total)
                  if c in extent and abs(extent[c][0] - ideal) <= length / count / 3]
        if window:
            cuts.append(min(window, key=lambda c: (cost[c], abs(extent[c][0] - ideal))))
    return tuple(cuts)
