"""The crossing counter, on layouts whose crossings are known by construction."""

from __future__ import annotations

import json

import pytest

from backpropviz.crossings import count_crossings, crossing_edges
from backpropviz.graphviz import run_dot


def laid_out(nodes: dict[str, tuple[float, float]], edges: list[tuple[str, str]]) -> dict:
    """dot's JSON of nodes pinned at ``nodes`` (points), joined by straight edges."""
    lines = ["digraph g {", '  graph [layout="neato" splines="line"];',
             '  node [shape="circle" width="0.2" fixedsize="true" label=""];']
    lines += [f'  {name} [pos="{x},{y}!"];' for name, (x, y) in nodes.items()]
    lines += [f"  {u} -> {v};" for u, v in edges]
    return json.loads(run_dot("\n".join([*lines, "}"]) + "\n", "json"))


SQUARE = {"a": (0, 0), "b": (200, 0), "c": (0, 200), "d": (200, 200)}


@pytest.mark.parametrize(("edges", "expected"), [
    ([("a", "d"), ("b", "c")], 1),  # the diagonals of a square
    ([("a", "b"), ("c", "d")], 0),  # two sides, apart
    ([("a", "d"), ("a", "b")], 0),  # a fork: they meet only at a
    ([("a", "d"), ("c", "d")], 0),  # a join at d
    ([("a", "d"), ("b", "c"), ("a", "b"), ("c", "d")], 1),
])
def test_counts_crossings_of_straight_edges(edges, expected):
    assert count_crossings(laid_out(SQUARE, edges)) == expected


def centres(data: dict) -> list[tuple[float, float]]:
    return [tuple(map(float, obj["pos"].split(","))) for obj in data["objects"]]


def test_says_which_edges_cross_and_where():
    data = laid_out(SQUARE, [("a", "d"), ("b", "c")])
    (first, second, (x, y)), = crossing_edges(data)
    assert {first, second} == {"0->3", "1->2"}
    (ax, ay), _, _, (dx, dy) = centres(data)  # graphviz moves the square by its margin
    assert x == pytest.approx((ax + dx) / 2, abs=1) and y == pytest.approx((ay + dy) / 2, abs=1)


def test_counts_a_curve_that_crosses_a_line_twice():
    # a -> b is a straight line; c -> d loops across it and back (a curve dot routes).
    nodes = {"a": (0, 100), "b": (400, 100), "c": (100, 200), "d": (300, 200)}
    data = laid_out(nodes, [("a", "b")])
    (_, ay), _, (cx, cy), (dx, _) = centres(data)
    dip = cy - 2.5 * (cy - ay)  # the curve's controls, as far below the line as c is above
    curve = {"tail": 2, "head": 3, "_draw_": [{"op": "b", "points": [
        [cx, cy], [cx, dip], [dx, dip], [dx, cy]]}]}
    data["edges"].append(curve)
    assert count_crossings(data) == 2


def test_counts_two_curves_crossing_at_a_point_both_pass_through():
    # dot routes two edges through one knot (the d2l_mlp_scalar's two inputs did):
    # each curve has a sample point where the other has one, and they cross there.
    nodes = {"a": (0, 0), "b": (200, 200), "c": (0, 200), "d": (200, 0)}
    data = laid_out(nodes, [])
    (ax, ay), (bx, by), (cx, cy), (dx, dy) = centres(data)
    middle = [(ax + bx) / 2, (ay + by) / 2]
    for gvid, (tail, head) in enumerate([((ax, ay), (bx, by)), ((cx, cy), (dx, dy))]):
        line = [{"op": "L", "points": [tail, middle, head]}]
        data.setdefault("edges", []).append(
            {"_gvid": gvid, "tail": 2 * gvid, "head": 2 * gvid + 1, "_draw_": line})
    assert count_crossings(data) == 1
    # touching there without crossing is not counted: c -> knot -> c's side again
    data["edges"][1]["_draw_"][0]["points"] = [[cx, cy], middle, [cx + 1, cy - 1]]
    assert count_crossings(data) == 0
