"""Pinned layouts: a folded picture's rows in reading order, and the book's sheared one."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import networkx as nx

from .crossings import count_crossings
from .dot import CONTINUE_FROM, DotOptions, Writer, folded
from .folding import bands
from .graphviz import layout_json
from .steps import state_at
from .style import BOOK

__all__ = ["folded_extent", "placement"]


def placement(G: nx.MultiDiGraph, options: DotOptions) -> dict[str, str] | None:
    """The pinned places of a folded or book-style picture; None for dot's own."""
    if options.rankdir == BOOK:
        return _book_pins(G, options)
    if not folded(options):
        return None
    return _pins(G, options)[0]


# How far up each point right moves in the book's layout (a shear of dot's left-to-right).
_BOOK_SHEAR = 0.45


def _book_pins(G: nx.MultiDiGraph, options: DotOptions) -> dict[str, str]:
    """The book's layout: dot's left-to-right one, sheared so that each rank to
    the right is higher, its edges' routes with it (a shear keeps a layout
    free of crossings: a curve's shear is the curve of its sheared controls)."""
    draft = Writer(G, replace(options, rankdir="LR", frame=None, wrap=1),
                   state_at(G, None)).dot()
    data = layout_json(draft)
    pins: dict[str, str] = {}
    routes: dict[str, str] = {}
    boxes = {}
    for obj in data.get("objects", []):
        if "pos" in obj:
            x, y = (float(n) for n in obj["pos"].split(",")[:2])
            pins[obj["name"]] = f"{x:.2f},{y + _BOOK_SHEAR * x:.2f}!"
            boxes[obj["_gvid"]] = (x, float(obj["width"]) * 36)
    for line in data.get("edges", []):
        if "id" not in line:
            continue
        # Each end rises with its box (a box is moved, not sheared), the route
        # between them with the shear from one box's side to the other's.
        (tail, tail_half), (head, head_half) = boxes[line["tail"]], boxes[line["head"]]
        start, end = tail + tail_half, head - head_half

        def rise(x: float, tail: float = tail, head: float = head,
                 start: float = start, end: float = end) -> float:
            if end <= start:
                return _BOOK_SHEAR * (tail + head) / 2
            along = min(1.0, max(0.0, (x - start) / (end - start)))
            return _BOOK_SHEAR * (tail + along * (head - tail))
        routes[line["id"]] = " ".join(_raised(part, rise) for part in line["pos"].split())
    # (where two boxes of a rank are far apart the ends' rises can bring routes
    # across each other: then neato routes every edge anew)
    return pins if count_crossings(_routed(data, pins, routes)) else {**pins, **routes}


def _routed(data: dict, pins: dict[str, str], routes: dict[str, str]) -> dict:
    """dot's JSON of ``data`` with its nodes at ``pins`` and its edges along ``routes``,
    as much of it as the crossing counter reads."""
    objects = [{**obj, "pos": pins[obj["name"]].rstrip("!")}
               for obj in data.get("objects", []) if "pos" in obj]
    edges = [{**line, "_draw_": [{"op": "b", "points": [
        [float(n) for n in part.split(",")] for part in routes[line["id"]].split()
        if part[:2] not in ("e,", "s,")]}]}
        for line in data.get("edges", []) if line.get("id") in routes]
    return {"objects": objects, "edges": edges}


# The gap between the rows (columns) of a folded picture, in points.
_ROW_GAP = 18.0


def _pins(G: nx.MultiDiGraph, options: DotOptions
          ) -> tuple[dict[str, str], tuple[float, float], dict]:
    """Where each node and edge of a folded picture goes; the picture's size (points,
    with its pad), and its draft's layout.

    dot lays the rows (clusters) out in one run, but stacks them in an order
    of its own; here they are put in reading order: rows top to bottom, left
    aligned (right for RL); columns left to right, top aligned (bottom for
    BT). Every edge keeps dot's route: one from a row to another is drawn as
    two pieces, each within its row, ending at a continuation mark.
    """
    data = layout_json(Writer(G, replace(options, frame=None), state_at(G, None)).dot())
    band = bands(G, options.wrap)

    def band_of(name: str) -> int:
        if name in band:
            return band[name]
        if name.endswith(CONTINUE_FROM):  # the mark where an edge comes into its row
            return band[name.split("->", 1)[1].rsplit("#", 1)[0]]
        # a badge, or the mark where an edge leaves its row: beside its sender
        return band[name.split("->", 1)[0]]

    boxes: dict[int, list[float]] = {}
    places: dict[str, tuple[float, float, int]] = {}
    for obj in data.get("objects", []):
        if "pos" not in obj:
            continue
        x, y = (float(n) for n in obj["pos"].split(",")[:2])
        half_w, half_h = float(obj["width"]) * 36, float(obj["height"]) * 36
        number = band_of(obj["name"])
        places[obj["name"]] = (x, y, number)
        box = boxes.setdefault(number, [math.inf, math.inf, -math.inf, -math.inf])
        box[:] = [min(box[0], x - half_w), min(box[1], y - half_h),
                  max(box[2], x + half_w), max(box[3], y + half_h)]
    across = options.rankdir in ("LR", "RL")
    shift: dict[int, tuple[float, float]] = {}
    edge = 0.0  # rows: the next row's top (y down from 0); columns: the next left side
    for number in sorted(boxes):
        x0, y0, x1, y1 = boxes[number]
        if across:
            dx = -x0 if options.rankdir == "LR" else -x1
            shift[number] = (dx, -edge - y1)
            edge += (y1 - y0) + _ROW_GAP
        else:
            dy = -y1 if options.rankdir == "TB" else -y0
            shift[number] = (edge - x0, dy)
            edge += (x1 - x0) + _ROW_GAP
    pins = {name: f"{x + shift[number][0]:.2f},{y + shift[number][1]:.2f}!"
            for name, (x, y, number) in places.items()}
    # The rows as stacked, with the legend below them (as neato places it).
    along = max((x1 - x0 if across else y1 - y0) for x0, y0, x1, y1 in boxes.values())
    # (graphviz keeps 8 points either side of a graph's label, and about 8 above it)
    label = ((float(data["lwidth"]) * 72 + 16, float(data["lheight"]) * 72 + 7.8)
             if "lwidth" in data else (0.0, 0.0))
    size = ((max(along, label[0]), edge - _ROW_GAP + label[1]) if across
            else (max(edge - _ROW_GAP, label[0]), along + label[1]))
    pad = 2 * float(data.get("pad", 0)) * 72  # (the same on the picture drawn)
    extent = (size[0] + pad, size[1] + pad)
    names = {obj["_gvid"]: obj["name"] for obj in data.get("objects", []) if "pos" in obj}
    for line in data.get("edges", []):
        tail = band_of(names[line["tail"]])
        if "id" not in line or tail != band_of(names[line["head"]]):
            continue  # left for neato to route
        dx, dy = shift[tail]
        pins[line["id"]] = " ".join(_moved(part, dx, dy) for part in line["pos"].split())
    return pins, extent, data


def folded_extent(G: nx.MultiDiGraph, options: DotOptions) -> tuple[float, float, int]:
    """A folded picture's size (points, with its pad) and its edges' crossings, from its
    draft alone: its rows keep dot's routes, so nothing is laid out again."""
    _, (width, height), data = _pins(G, options)
    return width, height, count_crossings(data)


def _moved(part: str, dx: float, dy: float) -> str:
    """One point of a graphviz edge ``pos`` ("x,y", "e,x,y" or "s,x,y"), moved."""
    return _raised(part, lambda x: dy, dx)


def _raised(part: str, rise: Callable[[float], float], dx: float = 0.0) -> str:
    """One point of a graphviz edge ``pos``, raised by ``rise`` of its x (and moved
    ``dx`` along)."""
    prefix = ""
    if part[:2] in ("e,", "s,"):
        prefix, part = part[:2], part[2:]
    x, y = (float(n) for n in part.split(","))
    return f"{prefix}{x + dx:.2f},{y + rise(x):.2f}"
