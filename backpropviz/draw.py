"""Graphviz drawings of the IR: DOT text, then SVG, PNG, PDF or any graphviz format."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from . import foreign, ops
from .captions import name_parts, value_names
from .engine import Node
from .errors import BackpropvizError
from .files import make_folder, write_atomically
from .formatting import MAX_ITEMS, display_number, grid_indices
from .ir import IRError, fold_chains, operand_edges, to_networkx, validate
from .steps import StepState, backward_steps, dead_masks, gradient_history, state_at
from .style import (
    ARROW_SIZE,
    CURRENT_EDGE_PEN,
    CURRENT_OP_PEN,
    DEAD_PEN,
    EDGE_PEN,
    EXPRESSION_PT,
    FONT,
    LABEL_PT,
    LEGEND_PT,
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

__all__ = [
    "BADGE_IN",
    "BADGE_OUT",
    "DEFAULT_DOT_TIMEOUT",
    "EDGE_LABEL_NODES",
    "FORMATS",
    "Diagram",
    "DrawError",
    "as_graph",
    "check_layout",
    "dot_time_limit",
    "draw",
    "edge_id",
    "render_steps",
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
# Edge labels take part in dot's ranking and make layout several times
# slower; past this many nodes, contributions become external labels,
# placed after the layout (a graph that big is for zooming, not a slide).
EDGE_LABEL_NODES = 150
# dot's settings for a graph past that size: fewer network-simplex and
# crossing-minimisation iterations, straight edges.
LARGE_GRAPH = {"nslimit": "0.2", "mclimit": "0.02", "splines": "line"}


class DrawError(BackpropvizError):
    """Why a graph could not be drawn or rendered, in one sentence."""


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


def _check_options(rankdir: str, theme: str, precision: int) -> Theme:
    """The theme named, after checking every option: each mistake is one DrawError."""
    if rankdir not in RANKDIRS:
        raise DrawError(f"unknown rankdir: {rankdir!r} (must be one of {list(RANKDIRS)})")
    if theme not in THEMES:
        raise DrawError(f"unknown theme: {theme!r} (must be one of {sorted(THEMES)})")
    if isinstance(precision, bool) or not isinstance(precision, int) or precision < 1:
        raise DrawError(f"precision must be a positive int of significant digits, "
                        f"got {precision!r}")
    return THEMES[theme]


def to_dot(G: nx.MultiDiGraph, *, rankdir: str = "LR", theme: str = "light",
           precision: int = 4, forward_only: bool = False, step: int | None = None,
           legend: bool = True, show_constants: bool = False) -> str:
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
    expression that computed it, in a smaller face.
    """
    _validate(G)
    palette = _check_options(rankdir, theme, precision)
    options = _Options(rankdir, palette, precision, forward_only, step, legend, show_constants)
    try:
        state = state_at(G, step)
    except IRError as error:
        raise DrawError(str(error)) from None
    return _Writer(G, options, state).dot()


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

    def __init__(self, G: nx.MultiDiGraph, options: _Options, state: StepState) -> None:
        self.G = G
        self.o = options
        self.t = options.theme
        self.state = state
        self.show_grads = not options.forward_only
        # Constants' gradients and saved marks are left out unless asked for:
        # nobody differentiates with respect to the 2 in L / 2.
        self.plain = set() if options.show_constants else {
            node for node, role in G.nodes(data="role") if role == "const"}
        # Unnamed values are headed by their expression (o − y), on a slide-sized graph.
        small = G.number_of_nodes() <= EDGE_LABEL_NODES
        self.expressions = ({node: name.text for node, name in value_names(G).items()
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
        self.fork_edges: set = set()
        self.external_labels = G.number_of_nodes() > EDGE_LABEL_NODES
        if self.show_grads:
            sent: dict[Any, list] = {}
            for u, targets in G._succ.items():
                for v, keyed in targets.items():
                    for k, attrs in keyed.items():
                        if attrs.get("grad") is not None and u not in self.plain:
                            sent.setdefault(u, []).append((u, v, k))
            for edges in sent.values():
                if len(edges) >= 2:
                    self.fork_edges.update(edges)

    def dot(self) -> str:
        t, o = self.t, self.o
        lines = ["digraph backprop {"]
        graph = {
            "rankdir": o.rankdir, "bgcolor": t.background, "fontname": FONT,
            "pad": "0.25", "nodesep": "0.3", "ranksep": "0.45", "newrank": "true",
            "id": "graph", "class": f"backprop theme-{t.name}",
        }
        if self.external_labels:
            graph["forcelabels"] = "true"
            # Measured on unrolled loops and micrograd's demo network (bench/render.py):
            # past this size dot's network simplex and spline routing take minutes;
            # bounded, with straight edges, the same layout takes seconds.
            graph.update(LARGE_GRAPH)
        if o.step is not None:
            graph["class"] += f" step-{o.step}"
        legend = self.legend_html() if o.legend else None
        if legend:
            graph.update(label=legend, labelloc="b", labeljust="l")
        lines.append("  graph " + _attrs(graph) + ";")
        lines.append("  node " + _attrs({"fontname": FONT, "fontsize": _pt(VALUE_PT),
                                         "fontcolor": t.text, "penwidth": _pt(NODE_PEN)})
                     + ";")
        lines.append("  edge " + _attrs({"fontname": FONT, "fontsize": _pt(LABEL_PT),
                                         "color": t.edge, "arrowsize": _pt(ARROW_SIZE),
                                         "penwidth": _pt(EDGE_PEN)}) + ";")
        for node, attrs in self.G.nodes(data=True):
            node_attrs = (self.value_node(node, attrs) if attrs["kind"] == "value"
                          else self.op_node(node, attrs))
            lines.append(f"  {_quote(node)} {_attrs(node_attrs)};")
        # Each op's operand edges in argument order, then its result edge:
        # ordering="in" keeps that order on the page.
        pred, succ = self.G._pred, self.G._succ  # networkx's own dicts, read only
        for op, kind in self.G.nodes(data="kind"):
            if kind != "op":
                continue
            edges = operand_edges(self.G, op)
            edges += [(op, v, k) for v, keyed in succ[op].items() for k in keyed]
            for u, v, k in edges:
                attrs = self.edge(u, v, k, pred[v][u][k])
                badge = attrs.pop("badge", None)
                if badge is None:
                    lines.append(f"  {_quote(u)} -> {_quote(v)} {_attrs(attrs)};")
                    continue
                # A contribution is a badge on its own edge: the edge runs into it
                # and on out of it, so it cannot be read as another edge's.
                eid = attrs["id"]
                lines.append(f"  {_quote(eid)} {_attrs(badge)};")
                lines.append(f"  {_quote(u)} -> {_quote(eid)} "
                             f"{_attrs({**attrs, 'id': eid + BADGE_IN, 'arrowhead': 'none'})};")
                lines.append(f"  {_quote(eid)} -> {_quote(v)} "
                             f"{_attrs({**attrs, 'id': eid + BADGE_OUT})};")
        lines.append("}")
        return "\n".join(lines) + "\n"

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
        if attrs.get("stored") and node not in self.plain:
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
        dead = attrs.get("dead")  # only a gate (a ReLU) has it: where it blocks the gradient
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
                               widths=_column_widths([texts], LABEL_PT), fill=t.label_fill,
                               brackets=type(contribution) is not float
                               and bool(np.ndim(contribution)), hidden=not known)
            classes.append("contribution" if known else "pending-contribution")
            if self.external_labels:
                # Past slide size, a label placed after the layout keeps dot fast.
                result["xlabel"] = f"<{html}>"
            else:
                line = t.grad if known else t.edge
                badge = (f'<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1" '
                         f'STYLE="ROUNDED" COLOR="{line}" BGCOLOR="{t.label_fill}">'
                         f"<TR><TD>{html}</TD></TR></TABLE>")
                result["badge"] = {"id": result["id"], "shape": "plain", "label": f"<{badge}>",
                                   "class": " ".join(["badge", *classes[1:]])}
        if key in self.state.current_edges:
            classes.append("current")
            result.update(color=t.highlight_line, penwidth=_pt(CURRENT_EDGE_PEN))
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
                         f'</TD><TD>{_font(" zeroed by " + self.gates(), t.muted, LEGEND_PT)}'
                         "</TD></TR>"
                         "</TABLE>")
        if any(expected is not None for _, expected in self.G.nodes(data="expected")):
            items.append(_font("wrong gradient", t.dead_text, LEGEND_PT)
                         + _font(" (the reference's beneath)", t.muted, LEGEND_PT))
        if any(flag for _, flag in self.G.nodes(data="error_start")):
            items.append(_font("●", t.dead_line, MARK_PT)
                         + _font(" where the error starts", t.muted, LEGEND_PT))
        stored = self.G.graph.get("stored_bytes")
        if stored:
            note = f" saved for backward: {_bytes(stored)} in all"
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
        return (f'<<TABLE BORDER="0" CELLSPACING="10" CELLPADDING="2" '
                f'BGCOLOR="{t.label_fill}"><TR>{cells}</TR>{rows}</TABLE>>')


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


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


def run_dot(source: str, format: str = "svg") -> bytes:
    """Lay out and render DOT text with the ``dot`` executable, within the time limit.

    On a terminal, a run that takes more than a few seconds says how long it
    has been going; one that reaches the limit is stopped (DrawError).
    """
    if format not in FORMATS:
        raise DrawError(f"unknown format: {format!r} (must be one of {list(FORMATS)})")
    limit = _dot_timeout.get()
    try:
        process = subprocess.Popen(["dot", f"-T{format}"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise DrawError("failed to execute 'dot', make sure the Graphviz executables are "
                        "on your PATH (on Debian: apt-get install graphviz)") from None
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


class Diagram:
    """A drawing: its DOT ``source``, the IR ``graph``, and renders in any format."""

    def __init__(self, source: str, graph: nx.MultiDiGraph) -> None:
        self.source = source
        self.graph = graph
        self._cache: dict[str, bytes] = {}

    def __repr__(self) -> str:
        return f"<Diagram of {self.graph.number_of_nodes()} nodes>"

    def pipe(self, format: str = "svg") -> bytes:
        """The picture in a graphviz ``format`` (svg, png, pdf, dot, json...)."""
        if format not in self._cache:
            self._cache[format] = run_dot(self.source, format)
        return self._cache[format]

    @property
    def svg(self) -> str:
        return self.pipe("svg").decode("utf-8")

    def render(self, path: str | os.PathLike, format: str | None = None) -> Path:
        """Write the picture to ``path`` (format from its extension) and return the path."""
        path = Path(path)
        if format is None:
            format = path.suffix.lstrip(".").lower()
            if not format:
                raise DrawError(f"cannot tell the format of {str(path)!r}: give it an "
                                f"extension or a format (one of {list(FORMATS)})")
        return write_atomically(path, self.pipe(format))

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"image/svg+xml": self.svg}


def as_graph(graph_or_root: Any, names: Mapping[str, Any] | None = None) -> nx.MultiDiGraph:
    """An IR graph as it is, or the IR of a Value/Tensor root or a list of roots (with
    its chains of additions folded, as the command line draws it)."""
    if isinstance(graph_or_root, nx.MultiDiGraph):
        return graph_or_root
    if isinstance(graph_or_root, Node):
        return fold_chains(to_networkx(graph_or_root, names=names))
    if isinstance(graph_or_root, Sequence) and graph_or_root and all(
            isinstance(root, Node) for root in graph_or_root):
        return fold_chains(to_networkx(*graph_or_root, names=names))
    roots = graph_or_root if isinstance(graph_or_root, Sequence) else [graph_or_root]
    if roots and all(map(foreign.looks_like_node, roots)):  # a micrograd-style engine's
        return fold_chains(foreign.from_objects(*roots, names=names))
    raise DrawError(f"draw needs an IR graph, a Value or Tensor (or a node of an engine "
                    f"like micrograd's: .data, .grad and children), or a list of them, got "
                    f"{type(graph_or_root).__name__}")


def draw(graph_or_root: Any, *, names: Mapping[str, Any] | None = None, rankdir: str = "LR",
         theme: str = "light", precision: int = 4, forward_only: bool = False,
         step: int | None = None, legend: bool = True) -> Diagram:
    """A Diagram of an IR graph, or of the graph behind a Value or Tensor root."""
    G = as_graph(graph_or_root, names)
    source = to_dot(G, rankdir=rankdir, theme=theme, precision=precision,
                    forward_only=forward_only, step=step, legend=legend)
    return Diagram(source, G)


def step_diagrams(graph_or_root: Any, *, names: Mapping[str, Any] | None = None,
                  rankdir: str = "LR", theme: str = "light", precision: int = 4,
                  forward_only: bool = False, legend: bool = True) -> list[Diagram]:
    """One Diagram per state of the backward pass: step 0 (the seed) to the last op."""
    G = as_graph(graph_or_root, names)
    _validate(G)
    palette = _check_options(rankdir, theme, precision)
    replay = backward_steps(G)  # once, not once per picture
    return [Diagram(_Writer(G, _Options(rankdir, palette, precision, forward_only, k, legend),
                            state_at(G, k, replay)).dot(), G)
            for k in range(len(replay) + 1)]


def render_steps(G: Any, directory: str | os.PathLike, **options: Any) -> list[Path]:
    """Write step-000.svg, step-001.svg... into ``directory``; return the paths."""
    format = options.pop("format", "svg")
    directory = make_folder(directory)
    diagrams = step_diagrams(G, **options)
    return [diagram.render(directory / f"step-{k:03d}.{format}", format=format)
            for k, diagram in enumerate(diagrams)]
