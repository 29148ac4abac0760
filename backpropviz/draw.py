"""Graphviz drawings of the IR: DOT text, then SVG, PNG, PDF or any graphviz format."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import lru_cache
from html import escape
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .captions import Caption, name_parts, step_captions, value_names
from .errors import DrawError
from .files import make_folder, write_atomically
from .formatting import MAX_ITEMS, byte_size, display_number, grid_indices
from .ir import IRError, operand_edges, to_graphml, to_json, validate
from .script import as_graph
from .steps import StepState, backward_steps, dead_masks, gradient_history, state_at
from .style import (
    ARROW_SIZE,
    BOOK,
    CURRENT_EDGE_PEN,
    CURRENT_OP_PEN,
    DEAD_PEN,
    EDGE_PEN,
    EXPRESSION_PT,
    FONT,
    LABEL_PT,
    LEGEND_PT,
    LONG_SYMBOL_PT,
    MARK_PT,
    NAME_FONT,
    NAME_PT,
    NODE_PEN,
    RANKDIRS,
    RESULT_EDGE_PEN,
    THEMES,
    VALUE_PT,
    Theme,
    symbol_pt,
)
from .views import drawn_graph, group_path

__all__ = [
    "BADGE_IN",
    "BADGE_OUT",
    "DEFAULT_DOT_TIMEOUT",
    "EDGE_LABEL_NODES",
    "FORMATS",
    "GRAPHVIZ_JSON",
    "RENDER_FORMATS",
    "Diagram",
    "DrawError",
    "Fit",
    "check_layout",
    "dot_time_limit",
    "draw",
    "edge_id",
    "fit",
    "parse_frame",
    "portable_svg",
    "render_steps",
    "require_dot",
    "run_dot",
    "step_diagrams",
    "to_dot",
]

# The graphviz output formats we offer (all in every graphviz build with cairo).
FORMATS = ("bmp", "canon", "dot", "gif", "gv", "jpeg", "jpg", "json", "pdf", "plain",
           "png", "ps", "svg", "tif", "tiff", "xdot")
# The ids of the two pieces of an edge that runs through a badge (its
# contribution at a fork); the badge itself has the edge's id.
BADGE_IN, BADGE_OUT = "/in", "/out"
# What a Diagram renders: the IR as the command line exports it (json, graphml),
# and graphviz's formats, its layout JSON under another name.
GRAPHVIZ_JSON = "graphviz-json"
IR_FORMATS = {"json": lambda G: to_json(G) + "\n", "graphml": lambda G: to_graphml(G) + "\n"}
RENDER_FORMATS = tuple(sorted({*FORMATS, *IR_FORMATS, GRAPHVIZ_JSON}))
# Edge labels take part in dot's ranking and make layout several times
# slower; past this many nodes, contributions become external labels,
# placed after the layout (a graph that big is for zooming, not a slide).
EDGE_LABEL_NODES = 150
# dot's settings for a graph past that size: fewer network-simplex and
# crossing-minimisation iterations, straight edges.
LARGE_GRAPH = {"nslimit": "0.2", "mclimit": "0.02", "splines": "line"}


def _pt(points: float) -> str:
    """A size as DOT text: ``14`` for 14.0, ``2.6`` for 2.6."""
    return f"{points:g}"


# ---------------------------------------------------------------- DOT


def _quote(text: str) -> str:
    if "\\" in text or '"' in text:
        text = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def _attrs(attrs: Mapping[str, str]) -> str:
    parts = []
    for key, value in attrs.items():
        if key in ("label", "xlabel") and value.startswith("<") and value.endswith(">"):
            parts.append(f"{key}={value}")
        else:
            parts.append(f"{key}={_quote(value)}")
    return "[" + " ".join(parts) + "]"


def _font(text: str, color: str, size: float | None = None, face: str | None = None) -> str:
    extra = f' POINT-SIZE="{size:g}"' if size else ""
    extra += f' FACE="{face}"' if face else ""
    return f'<FONT COLOR="{color}"{extra}>{text}</FONT>'


def _name_html(name: str, theme: Theme) -> str:
    """A name in the book's style: ``W1`` as an italic W with subscript 1."""
    base, sub = name_parts(name)
    body = f"<I>{escape(base)}</I>" + (f"<SUB>{escape(sub)}</SUB>" if sub else "")
    return _font(body, theme.text, NAME_PT, NAME_FONT)


@lru_cache(maxsize=1 << 16)
def _scalar_text(x: float, precision: int) -> str:
    # A number recurs: a value's last running sum is its gradient, and every
    # picture of a backward pass shows the same numbers again.
    return display_number(x, precision)


def _grid_texts(x: Any, precision: int) -> tuple[list[list[str]], list[list[Any]]]:
    """The texts of a number or array as laid out, and the array index of each cell."""
    if type(x) is float:  # the common case, a scalar Value: no numpy on the way
        return [[_scalar_text(x, precision)]], [[()]]
    array = np.asarray(x, dtype=np.float64)
    grid = grid_indices(array.shape, MAX_ITEMS)
    texts = [[cell if isinstance(cell, str) else display_number(array[cell], precision)
              for cell in row] for row in grid]
    return texts, [[None if isinstance(cell, str) else cell for cell in row] for row in grid]


# Advance widths of Helvetica's glyphs, per 1000 units of the font size, for
# what numbers are made of; any other character counts as a full em.
_ADVANCE = {**dict.fromkeys("0123456789e", 556), ".": 278, "\u2212": 584, "+": 584,
            "n": 556, "a": 556, "i": 222, "f": 278, " ": 278}


def _column_widths(grids: Sequence[list[list[str]]], size: float) -> list[int]:
    """Minimum cell widths (points) that fit every grid's texts, column by column.

    A gradient cell is sized for every number it will ever show (partial sums
    and the final one), so the layout is the same at every backward step.
    """
    widths: list[float] = []
    for grid in grids:
        for row in grid:
            for column, text in enumerate(row):
                width = _advance(text) * size / 1000
                if column == len(widths):
                    widths.append(width)
                widths[column] = max(widths[column], width)
    # 8% for hinting and kerning, then the cell's padding on both sides.
    return [math.ceil(width * 1.08) + 2 * _PADDING + 1 for width in widths]


_PADDING = 2


@lru_cache(maxsize=1 << 16)
def _advance(text: str) -> int:
    """The advance width of ``text`` in thousandths of the font size."""
    return sum(_ADVANCE.get(c, 1000) for c in text)


def _array_html(texts: list[list[str]], color: str, theme: Theme, *, size: float = VALUE_PT,
                indices: list[list[Any]] | None = None, dead: np.ndarray | None = None,
                widths: list[int] | None = None, fill: str | None = None,
                brackets: bool = False, hidden: bool = False) -> str:
    """A grid of numbers in ``color``, bracketed if an array; dead entries marked.

    ``hidden`` keeps the grid's size but shows nothing: a gradient not yet
    computed at this backward step.
    """
    rows = []
    for r, row in enumerate(texts):
        cells = []
        for c, text in enumerate(row):
            width = f' WIDTH="{widths[c]}"' if widths else ""
            index = indices[r][c] if indices else None
            body = " " if hidden or not text else escape(text)
            if not hidden and dead is not None and index is not None and dead[index]:
                cells.append(f'<TD ALIGN="RIGHT"{width} BGCOLOR="{theme.dead_fill}">'
                             f"{_font(body, theme.dead_text, size)}</TD>")
            else:
                # Numbers right, ellipses centred, a slice's "[0,1]" left.
                align = "RIGHT" if index is not None else "LEFT" if text[:1] == "[" else "CENTER"
                cells.append(f'<TD ALIGN="{align}"{width}>{_font(body, color, size)}</TD>')
        rows.append(cells)
    if brackets:
        # Thin rules on the outer sides of a narrow first and last column.
        line = "transparent" if hidden else color
        span = f'ROWSPAN="{len(rows)}" WIDTH="4" BORDER="1" COLOR="{line}"'
        rows[0] = [f'<TD {span} SIDES="LTB"></TD>', *rows[0], f'<TD {span} SIDES="RTB"></TD>']
    bg = f' BGCOLOR="{fill}"' if fill and not hidden else ""
    # A little air between the columns of a matrix.
    spacing = 2 if len(texts[0]) > 1 else 0
    return (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="{spacing}" '
            f'CELLPADDING="{_PADDING}"{bg}>'
            + "".join("<TR>" + "".join(cells) + "</TR>" for cells in rows) + "</TABLE>")


@dataclass(frozen=True)
class _Options:
    rankdir: str
    theme: Theme
    precision: int
    forward_only: bool
    step: int | None
    legend: bool
    show_constants: bool = False
    # Rows (LR, RL) or columns (TB, BT) a long graph is folded into: how many, or
    # the ranks where the second, third... begin.
    wrap: int | tuple[int, ...] = 1
    frame: tuple[int, int] | None = None  # the frame (px) the picture is scaled to fill
    expand: bool = False  # groups drawn open, each in a box, rather than as one op
    symbolic: bool = False  # names only, no numbers, as the book's figures are


def _options(rankdir: str = "LR", theme: str = "light", precision: int = 4,
             forward_only: bool = False, step: int | None = None, legend: bool = True,
             show_constants: bool = False, wrap: int | Sequence[int] = 1,
             frame: tuple[int, int] | None = None, expand: bool = False,
             symbolic: bool = False) -> _Options:
    """The drawing options, each checked: every mistake is one DrawError."""
    if rankdir not in RANKDIRS:
        raise DrawError(f"unknown rankdir: {rankdir!r} (must be one of {list(RANKDIRS)})")
    if theme not in THEMES:
        raise DrawError(f"unknown theme: {theme!r} (must be one of {sorted(THEMES)})")
    if isinstance(precision, bool) or not isinstance(precision, int) or precision < 1:
        raise DrawError(f"precision must be a positive int of significant digits, "
                        f"got {precision!r}")
    if not isinstance(wrap, int):
        wrap = tuple(sorted(set(wrap)))
        if not all(isinstance(cut, int) and cut > 0 for cut in wrap):
            raise DrawError(f"wrap is a number of rows or the ranks where rows begin "
                            f"(positive ints), got {wrap!r}")
    elif isinstance(wrap, bool) or wrap < 1:
        raise DrawError(f"wrap must be a positive number of rows, got {wrap!r}")
    return _Options(rankdir, THEMES[theme], precision, forward_only, step, legend,
                    show_constants, wrap, frame, expand, symbolic)


def _folded(options: _Options) -> bool:
    return bool(options.wrap) if isinstance(options.wrap, tuple) else options.wrap > 1


def to_dot(G: nx.MultiDiGraph, *, rankdir: str = "LR", theme: str = "light",
           precision: int = 4, forward_only: bool = False, step: int | None = None,
           legend: bool = True, show_constants: bool = False,
           wrap: int | Sequence[int] = 1, frame: tuple[int, int] | None = None,
           expand: bool = False, modules: bool = False, compact: bool = False,
           symbolic: bool = False) -> str:
    """DOT text drawing the IR graph ``G`` (validated first).

    Graphviz node names and ``id`` attributes are the IR ids; edge ids are
    ``"u->v#key"``; ``class`` attributes name the kind, role and op, so the
    SVG can be scripted. ``step=None`` draws every gradient; ``step=k`` the
    state after k backward steps, with the k-th op highlighted. Every step
    and the final picture share one layout: a gradient not yet computed keeps
    its place, empty. The text is the same, byte for byte, for the same graph
    and options.

    Constants (numbers written in the script) are drawn without the
    gradient the engine gave them and without the saved-for-backward mark,
    unless ``show_constants``; a value without a name is headed by the
    expression that computed it, in a smaller face. ``wrap=k`` folds the
    graph into k rows (k columns for TB and BT), cut where fewest edges
    cross (``wrap=(8, 15)``: rows begin at ranks 8 and 15);
    ``frame=(width, height)`` scales the picture to fill that many pixels
    (see ``fit``).

    The ops of a ``group`` are drawn as one operator named after it, unless
    ``expand``, which draws them in a box; with ``modules``, a PyTorch
    model's innermost modules are drawn so too (``model.0``); ``compact``
    also closes every run of ops whose results have no name (views.py).
    ``symbolic`` draws names only, no numbers, as the book's figures do.
    """
    _validate(G)
    G = drawn_graph(G, expand=expand, modules=modules, compact_view=compact)
    options = _options(rankdir, theme, precision, forward_only, step, legend,
                       show_constants, wrap, frame, expand, symbolic)
    try:
        state = state_at(G, step)
    except IRError as error:
        raise DrawError(str(error)) from None
    band = step_bands(G, options.theme, precision)[step] if step is not None and legend \
        and not (forward_only or symbolic) and G.graph.get("backward_order") else None
    return _Writer(G, options, state, _placement(G, options), band).dot()


def _placement(G: nx.MultiDiGraph, options: _Options) -> dict[str, str] | None:
    """The pinned places of a folded or book-style picture; None for dot's own."""
    if options.rankdir == BOOK:
        return _book_pins(G, options)
    return _pins(G, options) if _folded(options) else None


# How far right each point up moves in the book's layout (a shear of dot's bottom-to-top).
_BOOK_SHEAR = 0.9


def _book_pins(G: nx.MultiDiGraph, options: _Options) -> dict[str, str]:
    """The book's layout: dot's bottom-to-top one, sheared so that each rank up
    is further right; the edges are routed anew (neato)."""
    import json

    draft = _Writer(G, replace(options, frame=None, wrap=1), state_at(G, None)).dot()
    data = json.loads(run_dot(draft, "json"))
    pins = {}
    for obj in data.get("objects", []):
        if "pos" in obj:
            x, y = (float(n) for n in obj["pos"].split(",")[:2])
            pins[obj["name"]] = f"{x + _BOOK_SHEAR * y:.2f},{y:.2f}!"
    return pins


# The gap between the rows (columns) of a folded picture, in points.
_ROW_GAP = 18.0


def _pins(G: nx.MultiDiGraph, options: _Options) -> dict[str, str]:
    """Where each node and edge of a folded picture goes.

    dot lays the rows (clusters) out in one run, but stacks them in an order
    of its own; here they are put in reading order: rows top to bottom, left
    aligned (right for RL); columns left to right, top aligned (bottom for
    BT). An edge within a row keeps dot's route; one between rows is left for
    neato to route.
    """
    import json

    draft = _Writer(G, replace(options, frame=None), state_at(G, None)).dot()
    data = json.loads(run_dot(draft, "json"))
    band = bands(G, options.wrap)

    def band_of(name: str) -> int:
        if name in band:
            return band[name]
        return band[name.split("->", 1)[0]]  # a badge: beside the value that sends it

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
    names = {obj["_gvid"]: obj["name"] for obj in data.get("objects", []) if "pos" in obj}
    def crosses(edge: str) -> bool:  # an edge (or the edge a badge is on) between rows
        tail, rest = edge.split("->", 1)
        return band_of(tail) != band_of(rest.rsplit("#", 1)[0].split("/")[0])

    for line in data.get("edges", []):
        if "id" not in line or crosses(line["id"].rsplit("/", 1)[0]):
            continue  # left for neato to route, both pieces of a badge's edge
        tail = band_of(names[line["tail"]])
        dx, dy = shift[tail]
        pins[line["id"]] = " ".join(_moved(part, dx, dy) for part in line["pos"].split())
    return pins


def _moved(part: str, dx: float, dy: float) -> str:
    """One point of a graphviz edge ``pos`` ("x,y", "e,x,y" or "s,x,y"), moved."""
    prefix = ""
    if part[:2] in ("e,", "s,"):
        prefix, part = part[:2], part[2:]
    x, y = (float(n) for n in part.split(","))
    return f"{prefix}{x + dx:.2f},{y + dy:.2f}"


def edge_id(u: Any, v: Any, key: Any) -> str:
    """The id of an edge in the DOT, the SVG and the layout: ``"u->v#key"``."""
    return f"{u}->{v}#{key}"


def _validate(G: nx.MultiDiGraph) -> None:
    try:
        validate(G)
    except IRError as error:
        raise DrawError(f"cannot draw an invalid graph: {error}") from None


class _Writer:
    """Builds the DOT text of one picture."""

    def __init__(self, G: nx.MultiDiGraph, options: _Options, state: StepState,
                 pins: Mapping[str, str] | None = None, band: str | None = None) -> None:
        self.G = G
        self.band = band  # the step's caption band (step_bands), above the legend
        # Where a folded picture's nodes and edges go (see _pins): given, the
        # DOT places them there, for neato -n2 to route the rest.
        self.pins = pins
        self.o = options
        self.t = options.theme
        self.state = state
        self.show_grads = not (options.forward_only or options.symbolic)
        # Constants' gradients and saved marks are left out unless asked for:
        # nobody differentiates with respect to the 2 in L / 2.
        self.plain = _plain_constants(G, options.show_constants)
        # Unnamed values are headed by their expression (o − y), on a slide-sized graph.
        small = G.number_of_nodes() <= EDGE_LABEL_NODES
        self.expressions = ({node: name.text for node, name in
                             value_names(G, precision=options.precision).items()
                             if G._pred[node]} if small else {})
        dead_values, dead_edges = dead_masks(G) if self.show_grads else ({}, {})
        self.dead_values = dead_values
        self.dead_edges = dead_edges
        # Every gradient a value shows at some step: its seed, then each
        # running sum (the last is its final gradient). Cells are sized for all.
        self.partials = gradient_history(G) if self.show_grads else {}
        if self.show_grads:
            # A gradient no recorded step made (another engine's whose steps
            # could not be watched) is still drawn, as its only number.
            for value, grad in G.nodes(data="grad"):
                if grad is not None and value not in self.partials:
                    self.partials[value] = [grad]
            for value in self.plain:
                self.partials.pop(value, None)
        # A fork: a value that sends gradients back along two or more edges.
        # Each edge then shows its contribution, and the node shows their sum.
        self.external_labels = G.number_of_nodes() > EDGE_LABEL_NODES
        self.fork_edges = fork_edges(G, self.plain) if self.show_grads else set()

    def dot(self) -> str:
        t, o = self.t, self.o
        lines = ["digraph backprop {"]
        graph = {
            "rankdir": "BT" if o.rankdir == BOOK else o.rankdir, "bgcolor": t.background,
            "fontname": FONT,
            "pad": "0.25", "nodesep": "0.3", "ranksep": "0.45", "newrank": "true",
            "id": "graph", "class": f"backprop theme-{t.name}",
        }
        if self.pins is not None:
            graph.update(layout="neato", splines="true")
        if o.frame is not None or _folded(o):
            # Closer together, and less margin, for a figure that is to fill a frame.
            graph.update(pad="0.1", nodesep="0.18", ranksep="0.28")
        if o.rankdir == BOOK:
            graph["ranksep"] = "0.25"  # its ranks climb a diagonal: they need less room
        if o.frame is not None:
            # Scaled (up or down) to fill the frame; one point is one pixel.
            graph.update(size=f"{o.frame[0] / 72:.4f},{o.frame[1] / 72:.4f}!", dpi="72",
                         margin="0")  # (a PDF page has none around it then)
        if self.external_labels:
            graph["forcelabels"] = "true"
            # Measured on unrolled loops and micrograd's demo network (bench/render.py):
            # past this size dot's network simplex and spline routing take minutes;
            # bounded, with straight edges, the same layout takes seconds.
            graph.update(LARGE_GRAPH)
        if o.step is not None:
            graph["class"] += f" step-{o.step}"
        legend = self.legend_html() if o.legend else None
        if self.band is not None:
            legend = _with_band(self.band, legend)
        if legend:
            graph.update(label=legend, labelloc="b", labeljust="l")
        lines.append("  graph " + _attrs(graph) + ";")
        lines.append("  node " + _attrs({"fontname": FONT, "fontsize": _pt(VALUE_PT),
                                         "fontcolor": t.text, "penwidth": _pt(NODE_PEN)})
                     + ";")
        lines.append("  edge " + _attrs({"fontname": FONT, "fontsize": _pt(LABEL_PT),
                                         "color": t.edge, "arrowsize": _pt(ARROW_SIZE),
                                         "penwidth": _pt(EDGE_PEN)}) + ";")
        band = bands(self.G, o.wrap) if _folded(o) else {}
        nodes: dict[int, list[str]] = {}
        for node, attrs in self.G.nodes(data=True):
            node_attrs = (self.value_node(node, attrs) if attrs["kind"] == "value"
                          else self.op_node(node, attrs))
            if self.pins is not None:
                node_attrs["pos"] = self.pins[node]
            nodes.setdefault(band.get(node, 0), []).append(
                f"{_quote(node)} {_attrs(node_attrs)};")
        # Each op's operand edges in argument order, then its result edge:
        # ordering="in" keeps that order on the page.
        edge_lines = []
        pred, succ = self.G._pred, self.G._succ  # networkx's own dicts, read only
        for op, kind in self.G.nodes(data="kind"):
            if kind != "op":
                continue
            edges = operand_edges(self.G, op)
            edges += [(op, v, k) for v, keyed in succ[op].items() for k in keyed]
            for u, v, k in edges:
                attrs = self.edge(u, v, k, pred[v][u][k])
                if band and band[u] != band[v]:
                    attrs["constraint"] = "false"
                badge = attrs.pop("badge", None)
                if badge is None:
                    edge_lines.append(f"  {_quote(u)} -> {_quote(v)} "
                                      f"{_attrs(self.pinned(attrs))};")
                    continue
                # A contribution is a badge on its own edge: the edge runs into it
                # and on out of it, so it cannot be read as another edge's.
                eid = attrs["id"]
                if self.pins is not None:
                    badge["pos"] = self.pins[eid]
                nodes[band.get(u, 0)].append(f"{_quote(eid)} {_attrs(badge)};")
                into = {**attrs, "id": eid + BADGE_IN, "arrowhead": "none"}
                out = {key: value for key, value in attrs.items()
                       if key not in ("dir", "arrowtail")}  # the backward arrow ends at u
                edge_lines.append(f"  {_quote(u)} -> {_quote(eid)} "
                                  f"{_attrs(self.pinned(into))};")
                edge_lines.append(f"  {_quote(eid)} -> {_quote(v)} "
                                  f"{_attrs(self.pinned({**out, 'id': eid + BADGE_OUT}))};")
        if band and self.pins is None:
            # Each row (or column) a cluster of its own; an edge from one to the
            # next does not rank its head after its tail, so each row starts anew.
            for number, statements in sorted(nodes.items()):
                lines.append(f"  subgraph cluster_row{number} {{")
                lines.append("    graph " + _attrs({"id": f"row{number}", "style": "invis",
                                                     "margin": "6"}) + ";")
                lines.extend("    " + statement for statement in statements)
                lines.append("  }")
        elif o.expand:
            lines.extend(self.boxed_groups(nodes.get(0, [])))
        else:
            lines.extend("  " + statement for number in sorted(nodes)
                         for statement in nodes[number])
        lines.extend(edge_lines)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def boxed_groups(self, statements: list[str]) -> list[str]:
        """The node statements, each group's (and its values') in a box of its own,
        boxes nested as the groups are."""
        path_of: dict[Any, tuple] = {}
        for node, attrs in self.G.nodes(data=True):
            if attrs.get("kind") == "op":
                path_of[node] = group_path(attrs)
        for node, attrs in self.G.nodes(data=True):
            if attrs.get("kind") == "value":
                producers = list(self.G._pred[node])
                if producers:
                    path_of[node] = path_of[producers[0]]
                else:
                    path_of[node] = group_path(attrs) or self.module_box(node, attrs, path_of)
        tree: dict = {"nodes": [], "inner": {}}
        for statement in statements:
            name = statement.split(" [", 1)[0].strip('"')
            place = tree
            for part in path_of.get(name, ()):
                place = place["inner"].setdefault(part, {"nodes": [], "inner": {}})
            place["nodes"].append(statement)
        lines: list[str] = []
        count = iter(range(1 << 30))

        def emit(place: dict, indent: str) -> None:
            lines.extend(indent + statement for statement in place["nodes"])
            for (name, _), inner in place["inner"].items():
                number = next(count)
                lines.append(f"{indent}subgraph cluster_group{number} {{")
                lines.append(f"{indent}  graph " + _attrs({
                    "id": f"group{number}", "class": "group", "label": str(name),
                    "labeljust": "l", "style": "rounded,dashed", "color": self.t.muted,
                    "fontcolor": self.t.muted, "fontsize": _pt(LEGEND_PT), "margin": "10",
                }) + ";")
                emit(inner, indent + "  ")
                lines.append(f"{indent}}}")

        emit(tree, "  ")
        return lines

    def module_box(self, node: Any, attrs: dict, path_of: dict) -> tuple:
        """The box of a leaf made outside every group: its module's, for a torch
        module's own parameter (``model.0.weight`` in ``model.0``); else none."""
        paths = {path_of[op] for op in self.G._succ[node]}
        if len(paths) == 1 and attrs.get("role") == "param" and attrs.get("label"):
            (path,) = paths
            if path and attrs["label"].rsplit(".", 1)[0] == path[-1][0]:
                return path
        return ()

    def pinned(self, attrs: dict[str, str]) -> dict[str, str]:
        """An edge's attributes, with its route if the folded layout keeps it."""
        if self.pins is not None and attrs["id"] in self.pins:
            attrs["pos"] = self.pins[attrs["id"]]
        return attrs

    # -------------------------------------------------------- nodes

    def value_node(self, node: Any, attrs: dict) -> dict[str, str]:
        t, o = self.t, self.o
        fill = t.param_fill if attrs["role"] == "param" else t.node_fill
        classes = ["value", attrs["role"]]
        header = []
        if attrs["label"]:
            header.append(_name_html(attrs["label"], t))
        elif node in self.expressions:
            header.append(_font(escape(self.expressions[node]), t.muted, EXPRESSION_PT,
                                NAME_FONT))
        if attrs.get("stored") and node not in self.plain and not o.symbolic:
            classes.append("stored")
            header.append(_font("●", t.saved, MARK_PT))
        is_array = bool(attrs["shape"])
        texts, indices = _grid_texts(attrs["data"], o.precision)
        body = [f"<TD>{_array_html(texts, t.text, t, brackets=is_array)}</TD>"]
        rule = t.node_line
        partials = self.partials.get(node)
        if partials:
            known = node in self.state.grads
            grad = self.state.grads[node] if known else partials[-1]
            grad_texts, _ = _grid_texts(grad, o.precision)
            widths = _column_widths([_grid_texts(p, o.precision)[0] for p in partials],
                                    VALUE_PT)
            dead = self.dead_mask_now(node, grad) if known else None
            classes.append("has-grad" if known else "pending-grad")
            if dead is not None:
                classes.append("dead")
            updated = node in self.state.updated
            # A gradient that `backpropviz check` found wrong: in red, the
            # reference's number under it.
            wrong = attrs.get("expected") is not None
            if wrong:
                classes.append("wrong")
            grad_html = _array_html(grad_texts, t.dead_text if wrong else t.grad, t,
                                    indices=indices, dead=dead,
                                    widths=widths, brackets=is_array, hidden=not known,
                                    fill=t.highlight_fill if updated else None)
            # Value and gradient side by side: a rule between two numbers, a
            # gap between two bracketed arrays.
            if is_array:
                body.append(f'<TD WIDTH="6"></TD><TD>{grad_html}</TD>')
            else:
                body.append(f"<VR/><TD>{grad_html}</TD>")
                rule = t.node_line if known else "transparent"
        rows = []
        if header:
            span = 3 if partials and is_array else 2 if partials else 1
            rows.append(f'<TR><TD COLSPAN="{span}">{" ".join(header)}</TD></TR>')
        if not o.symbolic or not header:
            rows.append("<TR>" + "".join(body) + "</TR>")
        if attrs.get("expected") is not None:
            # Beside the wrong gradient once it is shown; until then its room is kept
            # (in the box's own fill: graphviz has no transparent text), so that
            # every step has the same layout.
            span = 3 if partials and is_array else 2 if partials else 1
            expected = _grid_texts(attrs["expected"], o.precision)[0]
            colour = t.dead_text if node in self.state.grads else fill
            rows.append(f'<TR><TD COLSPAN="{span}" ALIGN="RIGHT">'
                        + _font("expected " + ", ".join(cell for row in expected for cell in row),
                                colour, LEGEND_PT) + "</TD></TR>")
        label = (f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="1" '
                 f'COLOR="{rule}">' + "".join(rows) + "</TABLE>>")
        return {"id": str(node), "class": " ".join(classes), "shape": "box",
                "style": "rounded,filled", "fillcolor": fill, "color": t.node_line,
                "margin": "0.08,0.04", "label": label}

    def dead_mask_now(self, node: Any, grad: Any) -> np.ndarray | None:
        """The dead-ReLU mask of a value's gradient as shown now, if any entry is dead."""
        if not self.dead_edges or (grad != 0 if type(grad) is float else np.all(grad)):
            return None
        final = self.dead_values.get(node)
        if final is None:
            # Part way through the backward pass a running sum may still be
            # all dead contributions even if later ones revive it.
            masks = [self.dead_edges.get(edge) for edge in self.G.out_edges(node, keys=True)
                     if edge in self.state.processed]
            if not masks or any(mask is None for mask in masks):
                return None
            final = masks[0]
            for mask in masks[1:]:
                final = final & mask
        if type(grad) is float:  # a zero scalar: dead where its mask says so
            return final if final else None
        dead = final & (np.asarray(grad, dtype=np.float64) == 0)
        return dead if dead.any() else None

    def op_node(self, node: Any, attrs: dict) -> dict[str, str]:
        t = self.t
        symbol = attrs["symbol"]
        classes = ["op", attrs["op"]]
        result = {"id": str(node), "shape": "circle", "style": "filled",
                  "fillcolor": t.op_fill, "color": t.op_line, "width": "0.42",
                  "margin": "0.04", "fontsize": _pt(symbol_pt(symbol)), "label": symbol}
        if not ops.get(attrs["op"]).commutative:
            # Keep operands in argument order (first on top in LR) where it matters.
            result["ordering"] = "in"
        if len(symbol) > 4:  # a long name or an expression: an oval, not a huge circle
            result.update(shape="ellipse", width="0.42", height="0.42")
        if attrs["op"] == ops.GROUP.name:
            kind = self.G.graph.get("module_classes", {}).get(symbol)
            if kind:  # a torch module: its path, and its class beneath
                result.update(label=f"<{escape(symbol)}<BR/>"
                              f"{_font(escape(kind), t.muted, LABEL_PT)}>", shape="ellipse")
            elif symbol not in self.G.graph.get("module_groups", ()):
                # A group of the script's is named like a value, in the book's italics.
                result.update(label=f"<<I>{escape(symbol)}</I>>", fontname=NAME_FONT,
                              fontsize=_pt(NAME_PT if len(symbol) <= 2 else symbol_pt(symbol)))
        # only a gate (a ReLU) has it: where it blocks the gradient
        dead = None if self.o.symbolic else attrs.get("dead")
        if dead is True or (type(dead) is list and np.any(dead)):
            classes.append("dead")
            result.update(color=t.dead_line, style="filled,dashed", penwidth=_pt(DEAD_PEN))
        if attrs.get("error_start"):  # where `backpropviz check` found the error starts
            classes.append("error-start")
            result.update(color=t.dead_line, fillcolor=t.dead_fill, penwidth=_pt(CURRENT_OP_PEN))
        if node == self.state.current:
            classes.append("current")
            result.update(color=t.highlight_line, fillcolor=t.highlight_fill,
                          penwidth=_pt(CURRENT_OP_PEN))
        result["class"] = " ".join(classes)
        return result

    # -------------------------------------------------------- edges

    def edge(self, u: Any, v: Any, k: Any, attrs: dict) -> dict[str, str]:
        t, o = self.t, self.o
        result = {"id": edge_id(u, v, k)}
        classes = ["operand" if "arg" in attrs else "result"]
        key = (u, v, k)
        if key in self.state.processed:
            classes.append("processed")
        if key in self.fork_edges:
            # Contributions at a fork, each on its own edge (the node shows
            # their sum); kept in place, empty, until the edge is processed.
            contribution = attrs["grad"]
            known = key in self.state.processed
            texts, indices = _grid_texts(contribution, o.precision)
            html = _array_html(texts, t.grad, t, size=LABEL_PT, indices=indices,
                               dead=self.dead_edges.get(key) if known else None,
                               widths=_column_widths([texts], LABEL_PT), fill=_backdrop(t),
                               brackets=type(contribution) is not float
                               and bool(np.ndim(contribution)), hidden=not known)
            classes.append("contribution" if known else "pending-contribution")
            if self.external_labels:
                # Past slide size, a label placed after the layout keeps dot fast.
                result["xlabel"] = f"<{html}>"
            else:
                line = t.grad if known else t.edge
                badge = (f'<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1" '
                         f'STYLE="ROUNDED" COLOR="{line}"{_bgcolor(t)}>'
                         f"<TR><TD>{html}</TD></TR></TABLE>")
                result["badge"] = {"id": result["id"], "shape": "plain", "label": f"<{badge}>",
                                   "class": " ".join(["badge", *classes[1:]])}
        if key in self.state.current_edges:
            classes.append("current")
            result.update(color=t.highlight_line, penwidth=_pt(CURRENT_EDGE_PEN))
            if attrs.get("grad") is not None and self.show_grads:
                # The gradient flows back: beside the highlight a blue line, its
                # arrowhead at the operand (graphviz: the head takes the first colour).
                result.update(color=f"{t.highlight_line}:{t.grad}", dir="both",
                              arrowtail="normal")
            if "badge" in result:
                result["badge"]["class"] += " current"
        elif u == self.state.current:
            # The op's result edge: the gradient that enters the current op.
            classes.append("current")
            result.update(color=t.highlight_line, penwidth=_pt(RESULT_EDGE_PEN), style="dashed")
        result["class"] = " ".join(classes)
        return result

    # -------------------------------------------------------- legend

    def gates(self) -> str:
        """What zeroed gradients in this picture: "a dead ReLU", "dropout"…"""
        names = sorted({ops.get(op).gate_name for _, op, dead in
                        ((n, a.get("op"), a.get("dead")) for n, a in self.G.nodes(data=True))
                        if dead is not None and op is not None and ops.get(op).gate_name})
        return " or ".join(names) or "a gate"

    def legend_html(self) -> str | None:
        """A key to the colours; the same at every backward step."""
        t = self.t
        items = [_font("value", t.text, LEGEND_PT)]
        if any(role == "param" for _, role in self.G.nodes(data="role")):
            items.append(f'<TABLE BORDER="1" CELLBORDER="0" COLOR="{t.node_line}" '
                         f'CELLPADDING="2" CELLSPACING="0" BGCOLOR="{t.param_fill}" '
                         f'STYLE="ROUNDED"><TR><TD>'
                         f'{_font("parameter", t.text, LEGEND_PT)}</TD></TR></TABLE>')
        if self.partials:
            items.append(_font("gradient", t.grad, LEGEND_PT))
        if self.fork_edges:
            items.append(_font("on an edge: its part of a sum at a fork", t.grad, LEGEND_PT))
        if self.dead_values or self.dead_edges:
            items.append(f'<TABLE BORDER="0" CELLPADDING="1" CELLSPACING="0">'
                         f'<TR><TD BGCOLOR="{t.dead_fill}">{_font("0", t.dead_text, LEGEND_PT)}'
                         f'</TD><TD>{_font(_GAP + "zeroed by " + self.gates(), t.muted, LEGEND_PT)}'
                         "</TD></TR>"
                         "</TABLE>")
        if any(expected is not None for _, expected in self.G.nodes(data="expected")):
            items.append(_font("wrong gradient", t.dead_text, LEGEND_PT)
                         + _font(_GAP + "(the reference's beneath)", t.muted, LEGEND_PT))
        if any(flag for _, flag in self.G.nodes(data="error_start")):
            items.append(_font("●", t.dead_line, MARK_PT)
                         + _font(_GAP + "where the error starts", t.muted, LEGEND_PT))
        stored = self.G.graph.get("stored_bytes")
        if stored and not self.o.symbolic:
            note = f"{_GAP}saved for backward: {byte_size(stored)} in all"
            items.append(_font("●", t.saved, MARK_PT) + _font(note, t.muted, LEGEND_PT))
        # What a producer says about the picture (e.g. how another engine's graph was read).
        notes = self.G.graph.get("notes", [])
        if len(items) == 1 and not notes:
            return None
        cells = "".join(f"<TD>{item}</TD>" for item in items)
        # Notes wrap to the key's width (in characters, roughly), so that they
        # do not stretch it.
        width = max(48, sum(len(re.sub(r"<[^>]*>", "", item)) + 4 for item in items))
        rows = "".join(
            f'<TR><TD COLSPAN="{len(items)}" ALIGN="LEFT">'
            + '<BR ALIGN="LEFT"/>'.join(_font(escape(line), t.muted, LEGEND_PT)
                                        for line in textwrap.wrap(note, width))
            + '<BR ALIGN="LEFT"/></TD></TR>' for note in notes)
        return (f'<<TABLE BORDER="0" CELLSPACING="10" CELLPADDING="2"{_bgcolor(t)}>'
                f"<TR>{cells}</TR>{rows}</TABLE>>")


# The space between a legend's sample and its words: a no-break space, which
# every SVG renderer keeps (Chromium and cairosvg drop a leading plain one).
_GAP = "&#160;"


def _backdrop(theme: Theme) -> str | None:
    """What is filled behind free-standing text: nothing on a transparent background
    (the slide's colour shows), else the theme's label fill."""
    return None if theme.background == "transparent" else theme.label_fill


def _bgcolor(theme: Theme) -> str:
    backdrop = _backdrop(theme)
    return f' BGCOLOR="{backdrop}"' if backdrop else ""


def _plain_constants(G: nx.MultiDiGraph, show_constants: bool) -> set:
    """The constants drawn without their gradient and saved mark (all, unless shown)."""
    if show_constants:
        return set()
    return {node for node, role in G.nodes(data="role") if role == "const"}


def fork_edges(G: nx.MultiDiGraph, plain: set) -> set[tuple[Any, Any, Any]]:
    """The edges of forks: a value (not in ``plain``) that sends gradients back
    along two or more edges. Each shows its contribution; the value their sum."""
    sent: dict[Any, list] = {}
    for u, targets in G._succ.items():
        if u in plain:
            continue
        for v, keyed in targets.items():
            for k, attrs in keyed.items():
                if attrs.get("grad") is not None:
                    sent.setdefault(u, []).append((u, v, k))
    return {edge for edges in sent.values() if len(edges) >= 2 for edge in edges}


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


# ---------------------------------------------------------------- rendering


# How long dot may take to lay out one picture, in seconds: past this it is
# stopped and the drawing refused with advice, so that nothing hangs.
DEFAULT_DOT_TIMEOUT = 60.0
_dot_timeout: ContextVar[float] = ContextVar("dot_timeout", default=DEFAULT_DOT_TIMEOUT)


@contextmanager
def dot_time_limit(seconds: float) -> Iterator[None]:
    """Within the block, every ``dot`` run is stopped after ``seconds``."""
    token = _dot_timeout.set(seconds)
    try:
        yield
    finally:
        _dot_timeout.reset(token)


# dot splits an edge that spans k ranks into k pieces and orders them all;
# measured (bench/render.py), 90,000 pieces take about 20 s, 800,000 minutes.
# Past this many per minute of the time limit a drawing is refused at once.
PIECES_PER_MINUTE = 200_000


def layout_pieces(G: nx.MultiDiGraph) -> int:
    """How many edge pieces dot will lay out: each edge's span in ranks (depth from
    the inputs), less one, summed. A parameter used at every step of an unrolled
    loop spans the whole loop, again and again."""
    depth: dict[Any, int] = {}
    for node in nx.topological_sort(G):
        depth[node] = max((depth[u] + 1 for u in G._pred[node]), default=0)
    return sum(max(0, depth[v] - depth[u] - 1) for u, v in G.edges())


def check_layout(G: nx.MultiDiGraph) -> None:
    """DrawError, at once, for a graph dot cannot lay out within the time limit."""
    pieces = layout_pieces(G)
    limit = _dot_timeout.get()
    if pieces > PIECES_PER_MINUTE * limit / 60:
        raise DrawError(
            f"graphviz would need minutes for this graph: its edges span {pieces:,} ranks in "
            "all (a value used by ops far apart, such as a weight shared by every step of an "
            "unrolled loop); draw fewer steps, name a ROOT nearer the output, or give dot "
            f"longer with --timeout (now {limit:g} s)")


_NO_DOT = ("failed to execute 'dot', make sure the Graphviz executables are on your PATH "
           "(on Debian: apt-get install graphviz)")


def require_dot() -> None:
    """DrawError now, rather than after a script has run, if ``dot`` cannot be found."""
    if shutil.which("dot") is None:
        raise DrawError(_NO_DOT)


def run_dot(source: str, format: str = "svg") -> bytes:
    """Lay out and render DOT text with the ``dot`` executable, within the time limit.

    On a terminal, a run that takes more than a few seconds says how long it
    has been going; one that reaches the limit is stopped (DrawError).
    """
    if format not in FORMATS:
        raise DrawError(f"unknown format: {format!r} (must be one of {list(FORMATS)})")
    limit = _dot_timeout.get()
    try:
        # A folded picture has its places in the DOT: neato -n2 keeps them.
        command = ["neato", "-n2"] if 'layout="neato"' in source[:2000] else ["dot"]
        process = subprocess.Popen([*command, f"-T{format}"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise DrawError(_NO_DOT) from None
    start = time.monotonic()
    data: bytes | None = source.encode("utf-8")
    shown = False
    try:
        while True:
            waited = time.monotonic() - start
            try:
                out, err = process.communicate(data, timeout=max(0.05, min(1.0, limit - waited)))
                break
            except subprocess.TimeoutExpired:
                data = None  # the input is sent once
                waited = time.monotonic() - start
                if waited >= limit:
                    raise DrawError(
                        f"dot did not finish the layout within {limit:g} s, so it was stopped; "
                        "draw a smaller graph (name a ROOT nearer the inputs, or fewer steps "
                        "of a loop), or give it longer with --timeout") from None
                if waited > 3 and sys.stderr.isatty():
                    sys.stderr.write(f"\rlaying out with dot: {waited:.0f} s "
                                     f"(stopped at {limit:g} s)")
                    sys.stderr.flush()
                    shown = True
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        if shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
    if process.returncode != 0:
        message = err.decode("utf-8", "replace").strip().splitlines()
        raise DrawError(f"dot failed with exit status {process.returncode}: "
                        f"{message[0] if message else 'no message'}")
    return out


_SUBSCRIPT = re.compile(rb'<text ([^>]*?)y="(-?[0-9.]+)"([^>]*?) baseline-shift="sub" '
                        rb'font-size="([0-9.]+)"')


def portable_svg(svg: bytes) -> bytes:
    """graphviz's SVG, with its subscripts (W₁) set lower and smaller in plain
    coordinates: cairosvg and other converters ignore ``baseline-shift``."""
    def lowered(match: re.Match) -> bytes:
        size = float(match.group(4))
        y = float(match.group(2)) + 0.3 * size
        return (b"<text " + match.group(1) + b'y="' + f"{y:.2f}".encode() + b'"'
                + match.group(3) + b' font-size="' + f"{0.72 * size:.2f}".encode() + b'"')
    return _SUBSCRIPT.sub(lowered, svg)


class Diagram:
    """A drawing: its DOT ``source``, the IR ``graph``, and renders in any format."""

    def __init__(self, source: str, graph: nx.MultiDiGraph) -> None:
        self.source = source
        self.graph = graph
        self.fit: Fit | None = None  # how it fills its frame, if it was fitted to one
        self._cache: dict[str, bytes] = {}

    def __repr__(self) -> str:
        kinds = [kind for _, kind in self.graph.nodes(data="kind")]
        gradients = "with" if self.graph.graph.get("backward_order") else "without"
        return (f"<Diagram of {kinds.count('value')} values and {kinds.count('op')} ops, "
                f"{gradients} gradients; .render('figure.svg') writes it>")

    def pipe(self, format: str = "svg") -> bytes:
        """The picture in a graphviz ``format`` (svg, png, pdf, dot...), or the IR:
        ``json`` is its node-link JSON and ``graphml`` its GraphML, as on the command
        line (graphviz's own layout JSON is ``graphviz-json``)."""
        if format not in self._cache:
            if format in IR_FORMATS:
                data = IR_FORMATS[format](self.graph).encode("utf-8")
            else:
                data = run_dot(self.source, "json" if format == GRAPHVIZ_JSON else format)
            if format == "svg":
                data = portable_svg(data)
            if format == "svg" and self.fit is not None:
                # Sized in pixels of the frame it was fitted to (graphviz writes points).
                data = re.sub(rb'^(<svg width="[0-9.]+)pt" height="([0-9.]+)pt"',
                              rb'\1px" height="\2px"', data, count=1, flags=re.M)
            self._cache[format] = data
        return self._cache[format]

    @property
    def svg(self) -> str:
        return self.pipe("svg").decode("utf-8")

    def render(self, path: str | os.PathLike, format: str | None = None) -> Path:
        """Write the picture to ``path`` and return the path written (``save`` is the same).

        The format is ``format``, else ``path``'s extension. As with the graphviz
        package, ``render("graph", format="svg")`` writes ``graph.svg``: the
        format's extension is added unless ``path`` has it already. A path whose
        extension names another format is refused.
        """
        path = Path(path)
        extension = path.suffix.lstrip(".").lower()
        if format is None:
            format = extension
            if not format:
                raise DrawError(f"cannot tell the format of {str(path)!r}: give it an "
                                f"extension or a format (one of {list(RENDER_FORMATS)})")
        elif extension != format.split("-")[-1]:
            if extension in RENDER_FORMATS:
                raise DrawError(f"{str(path)!r} is a .{extension} file but the format is "
                                f"{format!r}: give one of them, or make them agree")
            path = path.with_name(f"{path.name}.{format.split('-')[-1]}")
        if format not in RENDER_FORMATS:
            raise DrawError(f"unknown format: {format!r} (must be one of "
                            f"{list(RENDER_FORMATS)})")
        return write_atomically(path, self.pipe(format))

    save = render

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"image/svg+xml": self.svg, "text/plain": repr(self)}


# ---------------------------------------------------------------- fitting a frame

# What a slide needs at its full size: numbers this many pixels tall, every
# other text at least the second figure.
SLIDE_NUMBER_PX, SLIDE_TEXT_PX = 18.0, 14.0
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


def parse_frame(frame: Any) -> tuple[int, int]:
    """``"1920x1080"`` or ``(1920, 1080)`` as a pair of positive ints (pixels)."""
    given = frame
    if isinstance(frame, str):
        parts = frame.lower().replace("×", "x").split("x")
        try:
            frame = tuple(int(part) for part in parts)
        except ValueError:
            frame = ()
    if (not isinstance(frame, tuple) or len(frame) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                       for n in frame)):
        raise DrawError(f"a frame is WIDTHxHEIGHT in pixels, e.g. 1920x1080, got {given!r}")
    return frame


def fit(G: nx.MultiDiGraph, frame: Any, *, rankdir: str | None = None,
        **options: Any) -> Fit:
    """The layout that shows ``G`` largest in ``frame`` (e.g. ``"1920x1080"``).

    Tries the direction given (or left to right and top to bottom) with the
    graph whole and folded into 2, 3 or 4 rows (columns top to bottom), each
    laid out by dot; a folding whose rows dot did not stack in order is
    dropped. ``options`` are to_dot's (theme, precision...).
    """
    frame = parse_frame(frame)
    _validate(G)
    directions = [rankdir] if rankdir else ["LR", "TB"]
    G = drawn_graph(G, expand=options.get("expand", False),
                    modules=options.get("modules", False),
                    compact_view=options.get("compact", False))
    boxed = options.get("expand") and any(attrs.get("group") for _, attrs in G.nodes(data=True))
    depth = max(ranks(G).values(), default=0) + 1
    # (groups drawn open are boxes, which a folding into rows would cut)
    most = 1 if (G.number_of_nodes() > EDGE_LABEL_NODES or boxed or rankdir == BOOK) \
        else max(1, min(_MOST_ROWS, depth // 4))
    plain = _plain_constants(G, options.get("show_constants", False))
    symbolic = options.get("symbolic", False)
    drawn_forks = not (options.get("forward_only") or symbolic) and fork_edges(G, plain)
    number_pt = NAME_PT if symbolic else min(VALUE_PT, LABEL_PT) if drawn_forks else VALUE_PT
    text_pt = min(LEGEND_PT, EXPRESSION_PT, LONG_SYMBOL_PT)
    options = {**options, "frame": frame}  # laid out as it will be drawn
    candidates: dict[str, list[Fit]] = {direction: [] for direction in directions}
    extents: dict[str, dict] = {}
    started = time.monotonic()
    # Rows are added, each direction in turn, until a candidate is readable on
    # the slide (fewer rows are fewer edges running between them), more rows
    # stop helping, or the time is up (each try is a layout).
    for count in range(1, most + 1):
        for direction in directions:
            tried = candidates[direction]
            if count > 1 and (not tried or len(tried) < count - 1
                              or tried[-1].scale < (tried[-2].scale if len(tried) > 1 else 0)):
                continue
            if count == 1:
                size, extents[direction] = _placed(G, direction, 1, options)
                wrap: int | tuple[int, ...] = 1
            else:
                wrap = fold_cuts(G, count, extents[direction])
                size = _placed(G, direction, wrap, options)[0] if wrap else None
            if size is None:
                continue
            tried.append(Fit(frame, direction, wrap, min(frame[0] / size[0], frame[1] / size[1]),
                             number_pt, text_pt, "names" if symbolic else "numbers"))
        readable = [fit for tried in candidates.values() for fit in tried if fit.advice is None]
        if readable:
            return max(readable, key=lambda fit: fit.scale)
        if time.monotonic() - started > _FIT_SECONDS:
            break
    return max((fit for tried in candidates.values() for fit in tried),
               key=lambda fit: fit.scale)


def _placed(G: nx.MultiDiGraph, rankdir: str, wrap: int | tuple[int, ...],
            options: Mapping[str, Any]) -> tuple[tuple[float, float] | None, dict]:
    """The size (points, with the pad) of the picture as laid out (None for a
    folding dot cannot route), and each rank's span along the flow."""
    import json

    try:
        data = json.loads(run_dot(to_dot(G, rankdir=rankdir, wrap=wrap, **options), "json"))
    except DrawError:
        if wrap == 1:
            raise
        return None, {}  # dot cannot route some foldings ("triangulation failed")
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
    return (x1 - x0 + pad, y1 - y0 + pad), extent


def draw(graph_or_root: Any, *, names: Mapping[str, Any] | None = None,
         fit: Any = None, **options: Any) -> Diagram:
    """A Diagram of an IR graph, or of the graph behind a Value or Tensor root.

    ``options`` are to_dot's. ``fit="1920x1080"`` lays the graph out to fill
    that frame (direction and folding chosen unless ``rankdir`` is given) and
    sizes the picture to it; the Diagram's ``fit`` tells how (and, as
    ``fit.advice``, what to do if it is too small to read there).
    """
    G = as_graph(graph_or_root, names)
    chosen = _fitted(G, fit, options)
    diagram = Diagram(to_dot(G, **options), G)
    diagram.fit = chosen
    return diagram


def _fitted(G: nx.MultiDiGraph, frame: Any, options: dict[str, Any]) -> Fit | None:
    """Fit ``G`` to ``frame`` (if any), setting the options that draw it so."""
    if frame is None:
        return None
    options.pop("frame", None)
    chosen = fit(G, frame, **options)
    options.update(rankdir=chosen.rankdir, wrap=chosen.wrap, frame=chosen.frame)
    return chosen


def step_diagrams(graph_or_root: Any, *, names: Mapping[str, Any] | None = None,
                  fit: Any = None, captions: bool = True, **options: Any) -> list[Diagram]:
    """One Diagram per state of the backward pass: step 0 (the seed) to the last op,
    all with one layout (options as draw's), each with its caption band (step_bands)
    unless not ``captions`` (the page, which sets the caption beside the picture)."""
    G = as_graph(graph_or_root, names)
    _validate(G)
    chosen = _fitted(G, fit, options)
    options.pop("step", None)
    G = drawn_graph(G, expand=options.get("expand", False),
                    modules=options.pop("modules", False),
                    compact_view=options.pop("compact", False))
    checked = _options(**options)
    replay = backward_steps(G)  # once, not once per picture
    pins = _placement(G, checked)
    bands = step_bands(G, checked.theme, checked.precision) if captions and checked.legend \
        and not (checked.forward_only or checked.symbolic) else [None] * (len(replay) + 1)
    diagrams = [Diagram(_Writer(G, replace(checked, step=k), state_at(G, k, replay), pins,
                                bands[k]).dot(), G)
                for k in range(len(replay) + 1)]
    for diagram in diagrams:
        diagram.fit = chosen
    return diagrams


# A step picture's caption band: lines wrap at this many characters, and
# every step's band has as many lines, and the width, of the largest, so that
# all the steps keep one layout.
BAND_CHARS = 76
_BAND_EM = 0.62  # a character's width in a band, in ems (generous: its cell's minimum)


def _band_lines(caption: Caption) -> list[str]:
    """A caption's worked lines, each broken before an " = " past BAND_CHARS."""
    lines = []
    for line in caption.worked:
        parts = line.split(" = ")
        current = parts[0]
        for part in parts[1:]:
            if len(current) + 3 + len(part) > BAND_CHARS:
                lines.append(current)
                current = "    = " + part
            else:
                current += " = " + part
        lines.append(current)
    return lines


def step_bands(G: nx.MultiDiGraph, theme: str | Theme = "light",
               precision: int = 4) -> list[str]:
    """The caption band of every step picture of the drawn graph ``G``: step k of
    n, the rule, the equations with the engine's numbers (captions.py), and a
    key to the step's highlight; HTML-like labels, one size for all."""
    t = THEMES[theme] if isinstance(theme, str) else theme
    captions = step_captions(G, precision)
    lines = [_band_lines(caption) for caption in captions]
    height = max(len(step) for step in lines)
    widest = max([len(caption.rule) + 16 for caption in captions]
                 + [len(line) for step in lines for line in step])
    width = int(min(widest, BAND_CHARS + 8) * _BAND_EM * VALUE_PT)
    key = (f'<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="1"><TR>'
           f'<TD BORDER="1" COLOR="{t.highlight_line}" BGCOLOR="{t.highlight_fill}" '
           'STYLE="ROUNDED">'
           f'{_font(" this step ", t.text, LEGEND_PT)}</TD>'
           f'<TD>{_font(" its op and edges,   ", t.muted, LEGEND_PT)}</TD>'
           f'<TD>{_font("◀ blue", t.grad, LEGEND_PT)}</TD>'
           f'<TD>{_font(": the gradients it sends back to the inputs", t.muted, LEGEND_PT)}</TD>'
           "</TR></TABLE>")
    bands = []
    last = len(captions) - 1
    for k, (caption, step) in enumerate(zip(captions, lines, strict=True)):
        rows = [f'<B>{_font(f"step {k} of {last}", t.text, LEGEND_PT)}</B>'
                + _font(escape("  " + caption.rule), t.muted, LEGEND_PT)]
        rows += [_font(escape(line), t.text, VALUE_PT) for line in step]
        rows += [_font("&#160;", t.text, VALUE_PT)] * (height - len(step))
        rows.append(key)
        cells = "".join(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT">{row}</TD></TR>' for row in rows)
        bands.append(f'<TABLE BORDER="0" CELLSPACING="2" CELLPADDING="1" WIDTH="{width}" '
                     f'BGCOLOR="{t.label_fill}">{cells}</TABLE>')
    return bands


def _with_band(band: str, legend: str | None) -> str:
    """A graph label: the step's caption band, and the legend (if any) beneath it.

    Graphviz stretches a table to its cell: the legend's row ends in an empty
    cell about as wide as the band is wider than the legend (its text measured
    roughly), so that the legend keeps its own spacing.
    """
    rows = f'<TR><TD ALIGN="LEFT">{band}</TD></TR>'
    if legend:
        width = int(re.search(r'WIDTH="(\d+)"', band).group(1))
        text = re.sub(r"<[^>]*>", "", legend)
        cells = legend.count("<TD")
        spare = max(1, width - int(len(text) * 0.5 * LEGEND_PT + 22 * cells))
        rows += (f'<TR><TD ALIGN="LEFT"><TABLE BORDER="0" CELLSPACING="0" CELLPADDING="0"><TR>'
                 f'<TD>{legend[1:-1]}</TD><TD WIDTH="{spare}"></TD></TR></TABLE></TD></TR>')
    return f'<<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="0">{rows}</TABLE>>'


def render_steps(G: Any, directory: str | os.PathLike, **options: Any) -> list[Path]:
    """Write step-000.svg, step-001.svg... into ``directory``; return the paths."""
    format = options.pop("format", "svg")
    directory = make_folder(directory)
    diagrams = step_diagrams(G, **options)
    return [diagram.render(directory / f"step-{k:03d}.{format}", format=format)
            for k, diagram in enumerate(diagrams)]
