"""Counting where a laid-out figure's edges cross each other.

Reads dot's JSON output (``dot -Tjson``): each edge's Bézier curves are sampled
into a polyline, and every pair of edges is tested for intersections. Where two
edges share a node (a fork, a join, the two halves of an edge through its
badge), points close to that node do not count: they meet there by design.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import combinations, pairwise
from typing import Any

__all__ = ["count_crossings", "crossing_edges"]

Point = tuple[float, float]

# Samples per cubic Bézier piece, and how far (points) around a shared node an
# intersection is taken as the edges meeting there.
_SAMPLES, _NEAR_NODE = 12, 6.0


def count_crossings(layout: Mapping[str, Any]) -> int:
    """How many times the edges of ``layout`` (dot's JSON) cross each other."""
    return len(crossing_edges(layout))


def crossing_edges(layout: Mapping[str, Any]) -> list[tuple[str, str, Point]]:
    """Each crossing of ``layout``: the two edges' ids (or tail->head) and where."""
    boxes = {obj["_gvid"]: _box(obj) for obj in layout.get("objects", []) if "pos" in obj}
    edges = [(edge, _polyline(edge)) for edge in layout.get("edges", [])]
    found = []
    for (a, line_a), (b, line_b) in combinations(edges, 2):
        shared = {a["tail"], a["head"]} & {b["tail"], b["head"]}
        near = [boxes[node] for node in shared if node in boxes]
        if not _overlap(_bounds(line_a), _bounds(line_b)):
            continue
        for point in _intersections(line_a, line_b):
            if not any(_inside(point, box, _NEAR_NODE) for box in near):
                found.append((_edge_name(a), _edge_name(b), point))
    return found


def _edge_name(edge: Mapping[str, Any]) -> str:
    return str(edge.get("id") or f"{edge['tail']}->{edge['head']}")


def _box(obj: Mapping[str, Any]) -> tuple[float, float, float, float]:
    x, y = (float(v) for v in obj["pos"].split(","))
    half_w, half_h = float(obj.get("width", 0)) * 36, float(obj.get("height", 0)) * 36
    return x - half_w, y - half_h, x + half_w, y + half_h


def _inside(point: Point, box: tuple[float, float, float, float], margin: float) -> bool:
    x0, y0, x1, y1 = box
    return x0 - margin <= point[0] <= x1 + margin and y0 - margin <= point[1] <= y1 + margin


def _polyline(edge: Mapping[str, Any]) -> list[Point]:
    points: list[Point] = []
    for draw in edge.get("_draw_", []):
        if draw.get("op") in ("b", "B"):
            control = [tuple(map(float, p)) for p in draw["points"]]
            points.extend(_sampled(control))
        elif draw.get("op") in ("L",):
            points.extend(tuple(map(float, p)) for p in draw["points"])
    return points


def _sampled(control: list[Point]) -> Iterator[Point]:
    """Points along the cubic pieces of a Bézier spline (3n + 1 control points)."""
    yield control[0]
    for start in range(0, len(control) - 3, 3):
        p0, p1, p2, p3 = control[start:start + 4]
        for step in range(1, _SAMPLES + 1):
            t = step / _SAMPLES
            u = 1 - t
            yield (u ** 3 * p0[0] + 3 * u * u * t * p1[0] + 3 * u * t * t * p2[0] + t ** 3 * p3[0],
                   u ** 3 * p0[1] + 3 * u * u * t * p1[1] + 3 * u * t * t * p2[1] + t ** 3 * p3[1])


def _bounds(line: list[Point]) -> tuple[float, float, float, float]:
    if not line:
        return (0.0, 0.0, -1.0, -1.0)
    xs, ys = [p[0] for p in line], [p[1] for p in line]
    return min(xs), min(ys), max(xs), max(ys)


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def _intersections(a: list[Point], b: list[Point]) -> Iterable[Point]:
    """Where the polylines ``a`` and ``b`` cross (touching ends are not crossings)."""
    hits: list[Point] = []
    for p, q in pairwise(a):
        for r, s in pairwise(b):
            point = _segment_cross(p, q, r, s)
            if point is not None and not any(abs(point[0] - h[0]) + abs(point[1] - h[1]) < 1.0
                                              for h in hits):
                hits.append(point)
    return hits


def _segment_cross(p: Point, q: Point, r: Point, s: Point) -> Point | None:
    dx1, dy1, dx2, dy2 = q[0] - p[0], q[1] - p[1], s[0] - r[0], s[1] - r[1]
    denominator = dx1 * dy2 - dy1 * dx2
    if abs(denominator) < 1e-12:
        return None  # parallel (a shared run is not a crossing)
    t = ((r[0] - p[0]) * dy2 - (r[1] - p[1]) * dx2) / denominator
    u = ((r[0] - p[0]) * dy1 - (r[1] - p[1]) * dx1) / denominator
    if 0.0 < t < 1.0 and 0.0 < u < 1.0:
        return p[0] + t * dx1, p[1] + t * dy1
    return None
