"""Graphviz positions of a drawing's nodes and edges, shared by the SVG, HTML and video."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from .errors import DrawError
from .figure import to_dot
from .graphviz import run_dot

__all__ = ["EdgePath", "Layout", "NodeBox", "layout", "parse_layout"]

POINTS_PER_INCH = 72.0


@dataclass(frozen=True)
class NodeBox:
    """A node's place: centre ``(x, y)`` and size in points, y up as in graphviz."""

    x: float
    y: float
    width: float
    height: float
    shape: str  # "box" for values, "circle" for ops (an oval, for a long symbol)


@dataclass(frozen=True)
class EdgePath:
    """An edge as graphviz routed it.

    ``points`` are cubic Bezier control points (1 + 3n of them: start, then
    two controls and an end per segment). The arrow head runs from
    ``arrow_start`` (the spline's last point) to its tip ``arrow_end``.
    ``label`` is the centre of the edge's label, if it has one; ``badge``: the
    label is a contribution's badge that the edge runs through (two curves joined by
    a straight run across it); ``loop``: a rolled loop's back edge, dashed, from the
    block's output to the box that value enters the next repetition as, ``label`` its
    count.
    """

    points: list[tuple[float, float]]
    arrow_start: tuple[float, float] | None
    arrow_end: tuple[float, float] | None
    label: tuple[float, float] | None = None
    badge: bool = False
    loop: bool = False


@dataclass
class Layout:
    """Where graphviz put everything, in points with y up (graphviz's own coordinates).

    ``width`` and ``height`` are the drawing's bounding box; the SVG adds
    ``pad`` points on every side and flips y (an SVG element is at
    ``(x, -y)`` inside the graph's group).
    """

    width: float
    height: float
    pad: float
    nodes: dict[Any, NodeBox] = field(default_factory=dict)
    edges: dict[tuple[Any, Any, Any], EdgePath] = field(default_factory=dict)


def _point(text: str) -> tuple[float, float]:
    x, y = text.split(",")[:2]
    return float(x), float(y)


def _edge_path(pos: str) -> tuple[list, tuple | None, tuple | None]:
    """Parse graphviz's ``pos`` of an edge: ``e,x,y s,x,y x1,y1 x2,y2 ...``. An edge
    whose arrow is at its tail (dir=back: a rolled loop's back edge) comes reversed,
    running the way its arrow points."""
    end = start = None
    points = []
    for part in pos.split():
        if part.startswith("e,"):
            end = _point(part[2:])
        elif part.startswith("s,"):
            start = _point(part[2:])
        else:
            points.append(_point(part))
    if start is not None and end is None:
        points, end = points[::-1], start
    return points, (points[-1] if end is not None else None), end


def _edge_key(edge_id: str) -> Any:
    """The key back from an id that draw.edge_id wrote."""
    key = edge_id.rsplit("#", 1)[1]
    return int(key) if key.lstrip("-").isdigit() else key


def parse_layout(data: dict) -> Layout:
    """A Layout from the parsed output of ``dot -Tjson`` on one of our drawings."""
    x0, y0, x1, y1 = (float(n) for n in data["bb"].split(","))
    pad = float(data.get("pad", 0.0555)) * POINTS_PER_INCH
    result = Layout(width=x1 - x0, height=y1 - y0, pad=pad)
    names = {}
    badges: dict[Any, tuple[float, float]] = {}
    for obj in data.get("objects", []):
        if "pos" not in obj:  # a subgraph
            continue
        names[obj["_gvid"]] = obj["name"]
        x, y = _point(obj["pos"])
        if "badge" in obj.get("class", "").split():  # a contribution on its edge
            badges[obj["name"]] = (x, y)
            continue
        result.nodes[obj.get("id", obj["name"])] = NodeBox(
            x=x, y=y, width=float(obj["width"]) * POINTS_PER_INCH,
            height=float(obj["height"]) * POINTS_PER_INCH,
            shape="circle" if obj.get("shape") in ("circle", "ellipse") else "box")
    pieces = []
    into: dict[Any, list] = {}
    for edge in data.get("edges", []):
        if edge.get("style") == "invis":
            continue  # (what untangling.py told dot, not an edge of the graph)
        points, arrow_start, arrow_end = _edge_path(edge["pos"])
        u, v = names[edge["tail"]], names[edge["head"]]
        if edge.get("dir") == "back":  # (its path reversed: from the head to the tail)
            u, v = v, u
        if v in badges:  # the first piece of an edge through a badge
            into[v] = points
        else:
            pieces.append((edge, u, v, points, arrow_start, arrow_end))
    for edge, u, v, points, arrow_start, arrow_end in pieces:
        where = edge.get("lp") or edge.get("xlp")
        label = _point(where) if where else None
        edge_id = edge.get("id", "")
        if u in badges:
            # One path through the badge: the first piece, a straight run
            # across the badge (a cubic with its controls at its ends), the second.
            first = into[u]
            points = [*first, first[-1], points[0], *points]
            label = badges[u]
            edge_id = u
            u = edge_id.split("->", 1)[0]
        key = _edge_key(edge_id) if "#" in edge_id else 0
        result.edges[(u, v, key)] = EdgePath(points, arrow_start, arrow_end, label,
                                             badge=edge_id in badges,
                                             loop="loop" in edge.get("class", "").split())
    return result


def layout(G: nx.MultiDiGraph, **draw_options: Any) -> Layout:
    """The graphviz layout of ``to_dot(G, **draw_options)``: the same DOT as the SVG."""
    try:
        data = json.loads(run_dot(to_dot(G, **draw_options), "json"))
    except json.JSONDecodeError as error:
        raise DrawError(f"dot wrote JSON that cannot be read: {error}") from None
    return parse_layout(data)
