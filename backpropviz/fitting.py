"""Fitting a frame: the direction and folding that show a graph largest in W x H pixels."""

from __future__ import annotations

import contextvars
import json
import math
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import networkx as nx

from .crossings import count_crossings
from .dot import (
    EDGE_LABEL_NODES,
    badge_pt,
    dot_options,
    fork_edges,
    plain_constants,
    validated,
)
from .errors import DrawError
from .figure import to_dot
from .folding import fold_cuts, ranks
from .graphviz import run_dot
from .options import parse_frame
from .placement import folded_extent
from .style import BOOK, EXPRESSION_PT, LEGEND_PT, LONG_SYMBOL_PT, NAME_PT, VALUE_PT
from .views import drawn_graph

__all__ = ["SLIDE_NUMBER_PX", "SLIDE_TEXT_PX", "Fit", "fit"]


# ---------------------------------------------------------------- fitting a frame

# What a slide needs at its full size: numbers this many pixels tall, every
# other text at least the second figure (on a 16:9 slide of 1920 x 1080, one
# point is two pixels: 14 pt and 12 pt, what projected text wants).
SLIDE_NUMBER_PX, SLIDE_TEXT_PX = 28.0, 24.0
# At most this many rows, and no more trying after this many seconds of layouts.
_MOST_ROWS, _FIT_SECONDS = 8, 8.0


@dataclass(frozen=True)
class Fit:
    """How a picture fills a frame: the direction and folding chosen, and the
    ``scale`` (pixels of the frame per point of the drawing)."""

    frame: tuple[int, int]
    rankdir: str
    wrap: int | tuple[int, ...]
    scale: float
    number_pt: float  # the smallest number's size in the drawing, in points
    text_pt: float  # the smallest other text's
    numbers: str = "numbers"  # what the smallest main text is: "numbers", or "names"
    crossings: int = 0  # how many times its edges cross

    @property
    def rows(self) -> int:
        return self.wrap if isinstance(self.wrap, int) else len(self.wrap) + 1

    @property
    def number_px(self) -> float:
        return self.number_pt * self.scale

    @property
    def text_px(self) -> float:
        return self.text_pt * self.scale

    @property
    def advice(self) -> str | None:
        """None if the picture is slide-readable in its frame; else what to do."""
        if self.number_px >= SLIDE_NUMBER_PX and self.text_px >= SLIDE_TEXT_PX:
            return None
        width, height = self.frame
        advice = ("draw less of the graph (name a ROOT), group its parts with "
                  "backpropviz.group, or use --compact")
        if self.rankdir == BOOK:
            advice += ", or leave --rankdir to --fit"
        return (f"at {width}x{height} the {self.numbers} are {self.number_px:.1f} px tall "
                f"(a slide wants {SLIDE_NUMBER_PX:g} and up): {advice}")


def fit(G: nx.MultiDiGraph, frame: Any, *, rankdir: str | None = None,
        **options: Any) -> Fit:
    """The layout that shows ``G`` largest in ``frame`` (e.g. ``"1920x1080"``).

    Tries the direction given (or left to right and top to bottom) with the
    graph whole and folded into 2, 3, 4... rows (columns top to bottom), each
    laid out by dot, and keeps the one whose edges cross least (no more than
    the graph's laid out whole) and, of those, whose smallest number is
    largest (the fewest rows on a tie).
    ``options`` are to_dot's (theme, precision...).
    """
    frame = parse_frame(frame)
    validated(G)
    directions = [rankdir] if rankdir else ["LR", "TB"]
    G = drawn_graph(G, expand=options.get("expand", False),
                    modules=options.get("modules", False),
                    compact_view=options.get("compact", False))
    boxed = options.get("expand") and any(attrs.get("group") for _, attrs in G.nodes(data=True))
    depth = max(ranks(G).values(), default=0) + 1
    # (groups drawn open are boxes, which a folding into rows would cut)
    most = 1 if (G.number_of_nodes() > EDGE_LABEL_NODES or boxed or rankdir == BOOK) \
        else max(1, min(_MOST_ROWS, depth // 4))
    plain = plain_constants(G, options.get("show_constants", False))
    symbolic = options.get("symbolic", False)
    drawn_forks = not (options.get("forward_only") or symbolic) and fork_edges(G, plain)
    number_pt = NAME_PT if symbolic else min(VALUE_PT, badge_pt(frame)) if drawn_forks \
        else VALUE_PT
    text_pt = min(LEGEND_PT, EXPRESSION_PT, LONG_SYMBOL_PT)
    options = {**options, "frame": frame}  # laid out as it will be drawn
    candidates: dict[str, list[Fit]] = {direction: [] for direction in directions}
    extents: dict[str, dict] = {}
    started = time.monotonic()
    # Rows are added until more rows stop making the picture larger (twice
    # in a row) or the time is up (each try is a layout): the directions side
    # by side, each layout a dot process of its own.
    def tried_in(direction: str, count: int) -> Fit | None:
        if count == 1:
            size, extents[direction], crossings = _placed(G, direction, 1, options)
            wrap: int | tuple[int, ...] = 1
        else:
            wrap = fold_cuts(G, count, extents[direction])
            size, _, crossings = _placed(G, direction, wrap, options) if wrap \
                else (None, {}, 0)
        if size is None:
            return None
        return Fit(frame, direction, wrap, min(frame[0] / size[0], frame[1] / size[1]),
                   number_pt, text_pt, "names" if symbolic else "numbers", crossings)

    with ThreadPoolExecutor(max_workers=len(directions)) as pool:
        for count in range(1, most + 1):
            going = [direction for direction in directions if count == 1 or (
                candidates[direction] and not _shrinking(candidates[direction]))]
            # (each in the caller's context: dot's time limit is a context variable)
            tries = [pool.submit(contextvars.copy_context().run, tried_in, direction, count)
                     for direction in going]
            for direction, found in zip(going, (t.result() for t in tries), strict=True):
                if found is not None:
                    candidates[direction].append(found)
            if time.monotonic() - started > _FIT_SECONDS:
                break
    fits = [fit for tried in candidates.values() for fit in tried]
    # Crossings dot's own layout has are not the folding's doing: only those
    # past the fewest of the whole graph's count against a folding.
    whole = min(fit.crossings for fit in fits if fit.rows == 1)
    return min(fits, key=lambda fit: _preferred(fit, whole))


def _shrinking(tried: list[Fit]) -> bool:
    """Whether the last two foldings tried were each smaller than the one before
    (one smaller can be followed by a larger: rows cut elsewhere)."""
    scales = [fit.scale for fit in tried[-3:]]
    return len(scales) == 3 and scales[0] > scales[1] > scales[2]


def _preferred(fit: Fit, whole: int) -> tuple:
    """The order fits are preferred in: fewest crossings (past ``whole``, the
    graph's laid out whole), then the largest smallest number (to a percent),
    then the fewest rows."""
    return (max(0, fit.crossings - whole), -round(math.log(fit.scale), 2), fit.rows)


# to_dot's options that are the drawing's (the others choose the view, drawn already).
_DRAWING = ("theme", "precision", "forward_only", "legend", "show_constants", "expand",
            "symbolic")


def _placed(G: nx.MultiDiGraph, rankdir: str, wrap: int | tuple[int, ...],
            options: Mapping[str, Any]) -> tuple[tuple[float, float] | None, dict, int]:
    """The size (points, with the pad) of the picture as laid out (None for a
    folding dot cannot route), each rank's span along the flow, and how many
    times its edges cross."""
    if wrap != 1:  # measured on its draft, which drawing it lays out no more
        drawing = {key: options[key] for key in _DRAWING if key in options}
        try:
            width, height, crossings = folded_extent(
                G, dot_options(rankdir, wrap=wrap, frame=options["frame"], **drawing))
        except DrawError:
            return None, {}, 0  # dot cannot lay out some foldings
        return (width, height), {}, crossings
    data = json.loads(run_dot(to_dot(G, rankdir=rankdir, wrap=wrap, **options), "json"))
    x0, y0, x1, y1 = (float(n) for n in data["bb"].split(","))
    pad = 2 * float(data.get("pad", 0.25)) * 72
    rank = ranks(G)
    extent: dict[int, tuple[float, float]] = {}
    along = 0 if rankdir in ("LR", "RL") else 1
    sign = -1.0 if rankdir in ("RL", "TB") else 1.0  # graphviz's y is up
    for obj in data.get("objects", []):
        if "pos" in obj and obj["name"] in rank:
            centre = sign * float(obj["pos"].split(",")[along])
            half = float(obj["width" if along == 0 else "height"]) * 36
            lo, hi = extent.get(rank[obj["name"]], (math.inf, -math.inf))
            extent[rank[obj["name"]]] = (min(lo, centre - half), max(hi, centre + half))
    # (a graph past slide size is not folded, and its edges are too many to pair up)
    crossings = count_crossings(data) if G.number_of_nodes() <= EDGE_LABEL_NODES else 0
    return (x1 - x0 + pad, y1 - y0 + pad), extent, crossings
