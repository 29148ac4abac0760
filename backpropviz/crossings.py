"""Counting where a laid-out figure's edges cross each other.

Reads dot's JSON output (``dot -Tjson``): each edge's Bézier curves are sampled
into a polyline, and every pair of edges is tested for intersections. Where two
edges share a node (a fork, a join, the two halves of an edge through its
badge), points close to that node do not count: they meet there by design.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import combinations
from typing import Any

import numpy as np

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
    edges = [(edge, line, _bounds(line))
             for edge in layout.get("edges", []) for line in [_polyline(edge)]]
    found = []
    for (a, line_a, bounds_a), (b, line_b, bounds_b) in combinations(edges, 2):
        if not _overlap(bounds_a, bounds_b):
            continue
        shared = {a["tail"], a["head"]} & {b["tail"], b["head"]}
        near = [boxes[node] for node in shared if node in boxes]
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
    """Where the polylines ``a`` and ``b`` cross (touching ends are not crossings).

    Each segment holds its first point but not its last, so that two curves
    meeting at a point both pass through (dot routes two edges through one
    knot) are counted once there, and only if one goes from one side of the
    other to its other side; a polyline's first point is where its edge ends."""
    hits: list[Point] = []
    # Only the pairs of segments whose boxes meet can cross (in the order of a loop
    # over a's segments, then b's).
    for i, j in zip(*np.nonzero(_boxes_meet(a, b)), strict=True):
        i, j = int(i), int(j)
        (p, q), (r, s) = a[i:i + 2], b[j:j + 2]
        found = _segment_cross(p, q, r, s, i > 0, j > 0)
        if found is None:
            continue
        point, t, u = found
        if (t == 0.0 or u == 0.0) and not _through(
                _before(a, i) if t == 0.0 else p, point, q,
                _before(b, j) if u == 0.0 else r, s):
            continue  # they touch at a knot and part on the side they came from
        if not any(abs(point[0] - h[0]) + abs(point[1] - h[1]) < 1.0 for h in hits):
            hits.append(point)
    return hits


def _boxes_meet(a: list[Point], b: list[Point]) -> np.ndarray:
    """Whether the box of each segment of ``a`` meets that of each of ``b`` (len(a) - 1
    by len(b) - 1)."""
    if len(a) < 2 or len(b) < 2:
        return np.zeros((0, 0), dtype=bool)
    pa, pb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    low_a, high_a = np.minimum(pa[:-1], pa[1:]), np.maximum(pa[:-1], pa[1:])
    low_b, high_b = np.minimum(pb[:-1], pb[1:]), np.maximum(pb[:-1], pb[1:])
    return np.all((low_a[:, None, :] <= high_b[None, :, :])
                  & (low_b[None, :, :] <= high_a[:, None, :]), axis=-1)


def _before(line: list[Point], index: int) -> Point:
    """The last point of ``line`` before its ``index``-th that is another point."""
    for point in reversed(line[:index]):
        if point != line[index]:
            return point
    return line[index]


def _through(before: Point, at: Point, after: Point, come: Point, go: Point) -> bool:
    """Whether a path from ``come`` to ``go`` by ``at`` crosses the path
    ``before`` -> ``at`` -> ``after`` there (its two ends on its two sides)."""
    return _left(come, before, at, after) != _left(go, before, at, after)


def _left(point: Point, before: Point, at: Point, after: Point) -> bool:
    """Whether ``point`` (near ``at``) is on the left of the path before -> at -> after."""
    into, out = (at[0] - before[0], at[1] - before[1]), (after[0] - at[0], after[1] - at[1])
    of_into = _cross(into, (point[0] - before[0], point[1] - before[1])) > 0
    of_out = _cross(out, (point[0] - at[0], point[1] - at[1])) > 0
    # a left turn's left is within both half-planes, a right turn's within either
    return (of_into and of_out) if _cross(into, out) >= 0 else (of_into or of_out)


def _cross(u: Point, v: Point) -> float:
    return u[0] * v[1] - u[1] * v[0]


def _segment_cross(p: Point, q: Point, r: Point, s: Point, from_p: bool = False,
                   from_r: bool = False) -> tuple[Point, float, float] | None:
    """Where segment p-q meets r-s, and how far along each (0 to 1), their ends
    excluded (but p itself if ``from_p``, r itself if ``from_r``)."""
    dx1, dy1, dx2, dy2 = q[0] - p[0], q[1] - p[1], s[0] - r[0], s[1] - r[1]
    denominator = dx1 * dy2 - dy1 * dx2
    if abs(denominator) < 1e-12:
        return None  # parallel (a shared run is not a crossing)
    t = ((r[0] - p[0]) * dy2 - (r[1] - p[1]) * dx2) / denominator
    u = ((r[0] - p[0]) * dy1 - (r[1] - p[1]) * dx1) / denominator
    if _within(t, from_p) and _within(u, from_r):
        return (p[0] + t * dx1, p[1] + t * dy1), t, u
    return None


def _within(t: float, with_start: bool) -> bool:
    """Whether ``t`` lies along a segment, before its end (at its start too if
    ``with_start``)."""
    return (t >= 0.0 if with_start else t > 0.0) and t < 1.0
