"""Fitting a frame: the direction and folding that show a graph largest in W x H pixels."""

from __future__ import annotations

import contextvars
import itertools
import math
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from .crossings import count_crossings
from .dot import (
    EDGE_LABEL_NODES,
    Writer,
    badge_pt,
    dot_options,
    fork_edges,
    plain_constants,
)
from .errors import DrawError
from .figure import to_dot
from .folding import fold_cuts, ranks
from .graphviz import SUBSCRIPT_SCALE, layout_json
from .options import parse_frame
from .placement import folded_extent
from .schema import validated_once
from .steps import state_at
from .style import (
    BOOK,
    EXPRESSION_PT,
    FITTED_TYPE,
    LEGEND_PT,
    LONG_SYMBOL_PT,
    NAME_PT,
    VALUE_PT,
    fitted_pt,
)
from .untangling import untangled
from .views import drawn_graph

__all__ = ["MANY_NUMBERS", "MANY_NUMBERS_PX", "SLIDE_NUMBER_PX", "SLIDE_TEXT_PX", "Fit",
           "band_room", "fit", "lone_choice", "measured", "number_target"]


# ---------------------------------------------------------------- fitting a frame

# What a slide needs at its full size: numbers this many pixels tall, every
# other text at least the second figure (on a 16:9 slide of 1920 x 1080, one
# point is two pixels: 14 pt and 12 pt, what projected text wants).
SLIDE_NUMBER_PX, SLIDE_TEXT_PX = 28.0, 24.0
# A graph that shows more numbers than the book's figures (mlp3's three layers
# show 51, the book's objective 25) may show them smaller: 22 px, its other
# text in the same proportion.
MANY_NUMBERS, MANY_NUMBERS_PX = 40, 22.0
# At most this many rows.
_MOST_ROWS = 8


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
    number_target: float = SLIDE_NUMBER_PX  # what a slide wants of its numbers (px)
    band: tuple[float, float] | None = None  # a step picture's caption band (points)

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
    def text_target(self) -> float:
        """What a slide wants of its other text (px), in proportion to its numbers."""
        return self.number_target * SLIDE_TEXT_PX / SLIDE_NUMBER_PX

    @property
    def advice(self) -> str | None:
        """None if the picture is slide-readable in its frame; else what to do."""
        return self.advice_for(compact=False)

    def advice_for(self, *, compact: bool) -> str | None:
        """``advice``, for a picture drawn with --compact already (if ``compact``): not
        offered again."""
        if self.number_px >= self.number_target and self.text_px >= self.text_target:
            return None
        width, height = self.frame
        advice = ("draw less of the graph (name a ROOT), or group its parts with "
                  "backpropviz.group") if compact else (
            "draw less of the graph (name a ROOT), group its parts with "
            "backpropviz.group, or use --compact")
        if self.rankdir == BOOK:
            advice += ", or leave --rankdir to --fit"
        if self.band is not None:
            advice = (f"{advice}; the caption under each step takes "
                      f"{self.band[1] * self.scale:.0f} px of the height: a taller frame, or "
                      "the page (-o steps.html), whose captions are not in the picture, "
                      "shows the graph larger")
        of = f" for a graph of more than {MANY_NUMBERS} numbers" \
            if self.number_target != SLIDE_NUMBER_PX else ""
        if self.number_px < self.number_target:
            short = f"the {self.numbers} are {self.number_px:.1f} px tall (a slide wants " \
                    f"{self.number_target:g} px and up{of})"
        else:
            short = f"the smallest text is {self.text_px:.1f} px tall (a slide wants " \
                    f"{self.text_target:.3g} px and up{of})"
        return f"at {width}x{height} {short}: {advice}"


def number_target(G: nx.MultiDiGraph) -> float:
    """How tall (px) a slide of 1920 x 1080 wants the numbers of ``G`` (as drawn): those
    of the book's figures 28 px, those of a graph of more numbers 22."""
    count = sum(int(np.size(data)) for _, data in G.nodes(data="data") if data is not None)
    return MANY_NUMBERS_PX if count > MANY_NUMBERS else SLIDE_NUMBER_PX


def band_room(G: nx.MultiDiGraph, frame: Any) -> float:
    """How wide (points, before a fitted figure's type grows: step_bands's ``room``) a
    step picture's caption band may be in ``frame`` with the numbers of ``G`` (as drawn)
    as tall as a slide wants them."""
    width = parse_frame(frame)[0] * fitted_pt(VALUE_PT) / number_target(G)
    return (width - _LABEL_MARGIN - _PAD) / FITTED_TYPE


def fit(G: nx.MultiDiGraph, frame: Any, *, rankdir: str | None = None,
        band: tuple[float, float] | None = None, **options: Any) -> Fit:
    """The layout that shows ``G`` largest in ``frame`` (e.g. ``"1920x1080"``).

    Considers the direction given (or left to right and top to bottom) with
    the graph whole and folded into 2, 3, 4... rows (columns top to bottom),
    each row laid out alone; the layouts estimated largest (from the graph laid
    out whole) are laid out by dot, and of those it keeps the one whose edges
    cross least (past the graph's laid out whole) and, of those, whose smallest
    number is largest (the fewest crossings, then rows, on a tie); a folding that
    crosses more is untangled as its drawing would be (untangling.py) and
    measured again, the largest first, until one crosses no more. A fitted
    figure's type is larger against its boxes' padding (style.FITTED_TYPE).
    ``band`` is the width and height (points, as drawn) of a step picture's caption
    band, drawn under the legend of each (step_bands): the frame holds it too.
    ``options`` are to_dot's (theme, precision...).
    """
    frame = parse_frame(frame)
    with validated_once(G):  # (each layout's DOT text, to_dot's, takes it as checked)
        return _fit(G, frame, rankdir, band, options)


def _fit(G: nx.MultiDiGraph, frame: tuple[int, int], rankdir: str | None,
         band: tuple[float, float] | None, options: dict[str, Any]) -> Fit:
    directions = [rankdir] if rankdir else ["LR", "TB"]
    G = drawn_graph(G, expand=options.get("expand", False),
                    modules=options.get("modules", False),
                    compact_view=options.get("compact", False))
    depth = max(ranks(G).values(), default=0) + 1
    most = _most_rows(G, rankdir, options, depth)
    number_pt, text_pt, name = _type_sizes(G, frame, options)
    options = {**options, "frame": frame}  # laid out as it will be drawn
    target = SLIDE_NUMBER_PX if options.get("symbolic") else number_target(G)

    def tried(direction: str, wrap: int | tuple[int, ...],
              untangle: bool = False) -> tuple[Fit | None, _Ranks]:
        size, spans, crossings = _placed(G, direction, wrap, options, untangle)
        if size is None:
            return None, spans
        size = _with_band(size, band)
        return Fit(frame, direction, wrap, min(frame[0] / size[0], frame[1] / size[1]),
                   number_pt, text_pt, name, crossings, target, band), spans

    def in_parallel(pool: ThreadPoolExecutor, tries: list[tuple[Any, ...]]) -> list:
        # (each in the caller's context: dot's time limit is a context variable)
        return [done.result() for done in
                [pool.submit(contextvars.copy_context().run, tried, *one) for one in tries]]

    # The graph laid out whole in the first direction; from its boxes' sizes
    # rank by rank the size of every folding in every direction is estimated,
    # and only those estimated largest are laid out (each layout is a dot
    # process: they run side by side).
    with ThreadPoolExecutor(max_workers=2) as pool:
        wholes = in_parallel(pool, [(directions[0], 1)])
        spans = wholes[0][1]
        estimated = []
        for direction in directions:
            if direction != directions[0]:
                estimated.append((_estimated(spans, direction, (), frame, band), direction, 1))
            along = _along(spans, direction)
            seen: set[tuple[int, ...]] = set()
            for count in range(2, most + 1):
                # (under a band a second row short of the first may be the largest:
                # the band's depth is spent already; every cut into two is estimated)
                cuts = [(cut,) for cut in range(1, depth)] if band and count == 2 else []
                for wrap in [*_near(fold_cuts(G, count, along), depth), *cuts]:
                    if wrap not in seen:
                        seen.add(wrap)
                        estimated.append((_estimated(spans, direction, wrap, frame, band),
                                          direction, wrap))
        ordered = sorted(estimated, key=lambda item: -item[0])
        best = ordered[:_LAID_OUT]
        if band and ordered:
            # (under a band, every cut into two rows estimated near the largest too:
            # the band has spent the frame's height, and a row's height decides)
            best += [item for item in ordered[_LAID_OUT:] if isinstance(item[2], tuple)
                     and len(item[2]) == 1 and item[0] * _UNTANGLED_GROWTH >= ordered[0][0]]
        # (the whole graph untangled beside them, if dot's own layout crosses: its
        # boxes, which the estimates read, are the same)
        untangle = [(directions[0], 1, True)] if wholes[0][0] and wholes[0][0].crossings \
            else []
        folds = in_parallel(pool, [(direction, wrap) for _, direction, wrap in best]
                            + untangle)
    fits = [found for found, _ in [*wholes, *folds] if found is not None]
    # Crossings dot's own layout has are not the folding's doing: only those
    # past the fewest of the whole graph's count against a folding.
    whole = min(fit.crossings for fit in fits if fit.rows == 1)
    # The largest first: one that crosses more is untangled (untangling.py, as its
    # drawing will be) and measured again, until one crosses no more than the whole.
    # Untangling moves boxes, and may leave a folding larger than dot's own layout of
    # it: under a band (whose depth leaves a row's height to decide), one that crosses,
    # nearly as large as the largest found, is untangled first.
    untangled_too = {(direction, wrap) for direction, wrap, _ in untangle}
    pending = sorted(fits, key=_largest)
    while pending:
        found = pending.pop(0)
        rivals = [found]
        if found.crossings <= whole:
            rivals = [other for other in pending if band and other.crossings > whole
                      and (other.rankdir, other.wrap) not in untangled_too
                      and other.scale * _UNTANGLED_GROWTH >= found.scale]
            if not rivals:
                return found
            pending.append(found)
        for other in rivals:
            if (other.rankdir, other.wrap) in untangled_too:
                continue
            untangled_too.add((other.rankdir, other.wrap))
            again = tried(other.rankdir, other.wrap, untangle=True)[0]
            if again is not None:
                fits.append(again)
                pending.append(again)
        pending.sort(key=_largest)
    return min(fits, key=lambda fit: _preferred(fit, whole))


def _most_rows(G: nx.MultiDiGraph, rankdir: str | None, options: Mapping[str, Any],
               depth: int) -> int:
    """How many rows ``G`` may be folded into: one for a graph past slide size, one whose
    groups are drawn open (boxes, which a folding into rows would cut) or the book's
    staircase."""
    boxed = options.get("expand") and any(attrs.get("group") for _, attrs in G.nodes(data=True))
    if G.number_of_nodes() > EDGE_LABEL_NODES or boxed or rankdir == BOOK:
        return 1
    return max(1, min(_MOST_ROWS, depth // 4))


def _type_sizes(G: nx.MultiDiGraph, frame: tuple[int, int],
                options: Mapping[str, Any]) -> tuple[float, float, str]:
    """The smallest number's size in a fitted drawing of ``G`` (points), the smallest
    other text's, and what the numbers are ("names" in a symbolic figure)."""
    plain = plain_constants(G, options.get("show_constants", False))
    symbolic = options.get("symbolic", False)
    drawn_forks = not (options.get("forward_only") or symbolic) and fork_edges(G, plain)
    # (sizes as drawn: a fitted figure's type is larger than the style's)
    number_pt = fitted_pt(NAME_PT) if symbolic else \
        min(fitted_pt(VALUE_PT), badge_pt(frame)) if drawn_forks else fitted_pt(VALUE_PT)
    # (a subscript as portable_svg sets it: its size in the DOT made smaller)
    text_pt = min(fitted_pt(min(LEGEND_PT, EXPRESSION_PT, LONG_SYMBOL_PT)),
                  fitted_pt(LEGEND_PT / SUBSCRIPT_SCALE) * SUBSCRIPT_SCALE)
    return number_pt, text_pt, "names" if symbolic else "numbers"


def lone_choice(G: nx.MultiDiGraph, frame: Any, *, rankdir: str | None = None,
                **options: Any) -> bool:
    """Whether fit has one layout only to consider for ``G`` (its direction given, and
    too large, or too boxed, to fold): then nothing needs laying out to choose it, and
    the drawing's own layout measures it (``measured``)."""
    if not rankdir:
        return False
    G = drawn_graph(G, expand=options.get("expand", False),
                    modules=options.get("modules", False),
                    compact_view=options.get("compact", False))
    return _most_rows(G, rankdir, options, max(ranks(G).values(), default=0) + 1) == 1


def measured(G: nx.MultiDiGraph, *, frame: Any, rankdir: str, size: tuple[float, float],
             **options: Any) -> Fit:
    """The Fit of ``G`` (as drawn: drawn_graph's) laid out whole in ``rankdir``, from its
    layout's ``size`` (points, with the pad): what fit chooses when lone_choice."""
    frame = parse_frame(frame)
    number_pt, text_pt, name = _type_sizes(G, frame, options)
    target = SLIDE_NUMBER_PX if options.get("symbolic") else number_target(G)
    return Fit(frame, rankdir, 1, min(frame[0] / size[0], frame[1] / size[1]),
               number_pt, text_pt, name, 0, target)


def _largest(fit: Fit) -> tuple:
    """The order fits are looked at in: the largest smallest number (to a percent),
    then the fewest crossings, then the fewest rows."""
    return (-round(math.log(fit.scale), 2), fit.crossings, fit.rows)


# Each rank's widest and highest box in a layout of the graph whole, and its
# boxes' widths and heights added up, with the space between them (points);
# the badges on the edges into rank r at r - 0.5 (a rank of their own, before
# it); under _LEGEND, the legend's width and height and the picture's pad.
_Ranks = dict[float, tuple[float, float, float, float]]
_LEGEND = -1
# How many foldings are laid out (those estimated largest), and what a row
# adds to its ranks' spans: its cluster's margins, the gap to the next row
# (placement's), and a continuation mark at its start.
_LAID_OUT, _ROW_MARGIN, _ROW_GAP, _MARK = 4, 12.0, 18.0, 48.0
# How much larger than dot's own layout of it a folding untangled may be.
_UNTANGLED_GROWTH = 1.1
# The room graphviz keeps either side of a graph's label, and a fitted figure's pad
# either side of the picture (dot.py's), in points.
_LABEL_MARGIN, _PAD = 16.0, 2 * 0.1 * 72
# The space between ranks and between the boxes of a rank in a fitted figure (dot.py's).
_RANKSEP, _NODESEP = 0.28 * 72, 0.18 * 72


def _near(cuts: tuple[int, ...], depth: int) -> list[tuple[int, ...]]:
    """``cuts`` (fold_cuts's, rows of about equal length), and with one of them
    moved a rank or two either way: rows of equal length need not be the largest."""
    if not cuts:
        return []
    found = [cuts]
    for index, cut in enumerate(cuts):
        low = cuts[index - 1] + 1 if index else 1
        high = cuts[index + 1] - 1 if index + 1 < len(cuts) else depth - 1
        found += [(*cuts[:index], moved, *cuts[index + 1:])
                  for moved in (cut - 2, cut - 1, cut + 1, cut + 2) if low <= moved <= high]
    return found


def _along(spans: _Ranks, rankdir: str) -> dict[int, tuple[float, float]]:
    """Where each rank would lie along the flow (points), its boxes' sizes and the
    space between ranks added up, as fold_cuts wants it."""
    place, found = 0.0, {}
    for r in sorted(r for r in spans if r != _LEGEND):
        thick = spans[r][0 if rankdir in ("LR", "RL") else 1]
        if r == int(r):
            found[int(r)] = (place, place + thick)
        place += thick + _RANKSEP
    return found


def _estimated(spans: _Ranks, rankdir: str, wrap: tuple[int, ...],
               frame: tuple[int, int], band: tuple[float, float] | None = None) -> float:
    """The scale a folding is estimated to have from the whole graph's layout: each
    row as long as its ranks' widest boxes and the space between them, as deep as
    its deepest rank's boxes one above another."""
    legend_width, legend_height, pad, _ = spans[_LEGEND]
    ranked = [r for r in spans if r != _LEGEND]
    edges = [min(ranked), *wrap, max(ranked) + 1]
    across = rankdir in ("LR", "RL")
    lengths, depths = [], []
    for number, (first, end) in enumerate(itertools.pairwise(edges)):
        row = [spans[r] for r in ranked if first <= r < end]
        if not row:
            continue
        lengths.append(sum(s[0 if across else 1] + _RANKSEP for s in row) - _RANKSEP
                       + (_MARK if number else 0) + _ROW_MARGIN)
        depths.append(max(s[3 if across else 2] for s in row) + _ROW_MARGIN)
    length, depth = max(lengths, default=0.0), sum(depths) + _ROW_GAP * (len(depths) - 1)
    width, height = (length, depth) if across else (depth, length)
    width, height = _with_band((max(width, legend_width) + pad, height + legend_height + pad),
                               band)
    return min(frame[0] / width, frame[1] / height)


def _with_band(size: tuple[float, float], band: tuple[float, float] | None
               ) -> tuple[float, float]:
    """A picture's ``size`` (points, with the pad) with a caption band under it (its
    label's margin and the pad on either side): as wide as the wider, as high as both."""
    if band is None:
        return size
    return max(size[0], band[0] + _LABEL_MARGIN + _PAD), size[1] + band[1]


def _preferred(fit: Fit, whole: int) -> tuple:
    """The order fits are preferred in: fewest crossings (past ``whole``, the
    graph's laid out whole), then the largest smallest number (to a percent),
    then the fewest crossings of all (one of dot's own a folding can undo),
    then the fewest rows."""
    return (max(0, fit.crossings - whole), -round(math.log(fit.scale), 2), fit.crossings,
            fit.rows)


# to_dot's options that are the drawing's (the others choose the view, drawn already).
_DRAWING = ("theme", "precision", "forward_only", "legend", "show_constants", "expand",
            "symbolic")


def _placed(G: nx.MultiDiGraph, rankdir: str, wrap: int | tuple[int, ...],
            options: Mapping[str, Any], untangle: bool = False
            ) -> tuple[tuple[float, float] | None, _Ranks, int]:
    """The size (points, with the pad) of the picture as laid out (None for a
    folding dot cannot route), each rank's span along the flow, and how many
    times its edges cross: as dot lays it out, or ``untangle``d as its drawing
    would be."""
    drawing = {key: options[key] for key in _DRAWING if key in options}
    checked = dot_options(rankdir, wrap=wrap, frame=options["frame"], **drawing)
    if wrap != 1:  # measured on its draft, which drawing it lays out no more
        try:
            width, height, crossings = folded_extent(
                G, untangled(G, checked) if untangle else checked)
        except DrawError:
            return None, {}, 0  # dot cannot lay out some foldings
        return (width, height), {}, crossings
    data = layout_json(to_dot(G, rankdir=rankdir, wrap=wrap, **options) if untangle
                       else Writer(G, checked, state_at(G, None)).dot())
    x0, y0, x1, y1 = (float(n) for n in data["bb"].split(","))
    pad = 2 * float(data.get("pad", 0.25)) * 72
    rank = ranks(G)
    extent: _Ranks = {}
    for obj in data.get("objects", []):
        # a badge on an edge is a rank of its own, before its head's
        name = obj.get("name", "")
        badge = "->" in name and name.split("->", 1)[1].rsplit("#", 1)[0]
        node = badge if badge in rank else name
        if "pos" not in obj or node not in rank:
            continue
        width, height = float(obj["width"]) * 72, float(obj["height"]) * 72
        key = rank[node] - (0.5 if badge else 0)
        widest, highest, widths, heights = extent.get(key, (0.0, 0.0, -_NODESEP, -_NODESEP))
        extent[key] = (max(widest, width), max(highest, height),
                       widths + width + _NODESEP, heights + height + _NODESEP)
    legend = ((float(data["lwidth"]) * 72 + 16, float(data["lheight"]) * 72 + 8)
              if "lwidth" in data else (0.0, 0.0))
    extent[_LEGEND] = (*legend, pad, 0.0)
    # (a graph past slide size is not folded, and its edges are too many to pair up)
    crossings = count_crossings(data) if G.number_of_nodes() <= EDGE_LABEL_NODES else 0
    return (x1 - x0 + pad, y1 - y0 + pad), extent, crossings
