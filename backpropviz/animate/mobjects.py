"""Manim mobjects of an IR graph on its graphviz layout: value boxes, op circles, curved edges."""

from __future__ import annotations

import functools
import pickle
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import replace
from html import escape
from typing import Any

import networkx as nx
import numpy as np
from manim import (
    DOWN,
    ITALIC,
    TAU,
    Arc,
    Circle,
    DashedVMobject,
    Ellipse,
    Line,
    MarkupText,
    MathTex,
    Polygon,
    RoundedRectangle,
    Text,
    VGroup,
    VMobject,
)

from ..formatting import MAX_ITEMS, dead_cells, format_array, held_rows
from ..layout import EdgePath, Layout
from ..names import IDENTIFIER, Heading, name_parts, subscripted
from ..style import (
    CURRENT_EDGE_PEN,
    DEAD_PEN,
    EDGE_PEN,
    EXPRESSION_PT,
    LABEL_PT,
    NAME_PT,
    NODE_PEN,
    RULE_PEN,
    VALUE_PT,
    Theme,
    symbol_pt,
)
from ..typeset import runs
from .kept_texts import KeptTexts
from .quick_text import QuickText

__all__ = [
    "Z_BADGE",
    "Z_FLYING",
    "Z_MARK",
    "Z_NUMBER",
    "Z_PULSE",
    "EdgeArrow",
    "GraphMobject",
    "LoopArrow",
    "OpNode",
    "Table",
    "TextStore",
    "ValueNode",
]

# A Text of font_size F has an em of F/72 scene units (measured: at font_size
# 48 a digit advances 0.3707 units, and Helvetica's digits are 0.556 em wide),
# so numbers take the room graphviz measured for them in the SVG.
EM_PER_FONT_SIZE = 1 / 72
# The SVG's faces (Helvetica for numbers, Times italic for names), or the
# first installed face that looks the same.
FONTS = ("Helvetica", "Arial", "Nimbus Sans", "Liberation Sans", "DejaVu Sans")
NAME_FONTS = ("Times", "Times New Roman", "Nimbus Roman", "Liberation Serif", "DejaVu Serif")
# Drawing order (z_index): the graph, then highlights, numbers, the "+=" badge
# and what flies into it, then the travelling pulses on top of everything.
Z_MARK, Z_NUMBER, Z_BADGE, Z_FLYING, Z_PULSE = 1, 2, 3, 4, 5
# A table's spacing in ems of its numbers, measured on the SVG (ink to ink):
# rows 1.45 em apart, columns 0.5 em apart, a bracket's rule 0.5 em from a
# vector's numbers and 0.7 em from a matrix's (graphviz spaces its cells
# 2 pt apart), with serifs of 0.35 em.
ROW_PITCH, COLUMN_GAP, BRACKET_SERIF = 1.45, 0.5, 0.35
VECTOR_INSET, MATRIX_INSET = 0.5, 0.7
# Between a value and its gradient, as in the SVG: 1.1 em between two arrays'
# brackets; 0.8 em between two plain numbers, with a rule in the middle.
ARRAY_GAP, NUMBER_GAP = 1.1, 0.8


# The texts made, by the faces they were made in (TextStore); a few thousand at most.
_MADE: dict[tuple, dict[tuple, bytes]] = {}
_MADE_AT_MOST = 4000


@functools.cache
def _installed_fonts() -> frozenset[str]:
    import manimpango

    return frozenset(manimpango.list_fonts())


class TextStore:
    """Makes each distinct text once and hands out copies.

    Building a Text runs Pango and parses an SVG (20-50 ms); a copy costs a
    fraction of that, and a clip shows the same numbers and names many times.
    A text is kept pickled, and each copy unpickled: a third of what
    ``copy.deepcopy`` takes for the same mobject (0.6 ms for a caption's line).
    """

    def __init__(self) -> None:
        self._latex = shutil.which("latex") is not None and shutil.which("dvisvgm") is not None
        installed = _installed_fonts()
        self.font = next((f for f in FONTS if f in installed), "Sans")
        self.name_font = next((f for f in NAME_FONTS if f in installed), "Serif")
        # Every store of a process with the same faces shares what it made: the clips
        # of one process (a notebook's, the suite's) show many of the same texts.
        if sum(map(len, _MADE.values())) > _MADE_AT_MOST:
            _MADE.clear()
        faces = (self.font, self.name_font, self._latex)
        self._made: dict[tuple, bytes] = _MADE.setdefault(faces, {})
        self._disk = KeptTexts(faces)  # (and what earlier processes made)

    def __deepcopy__(self, memo: dict) -> TextStore:
        # Mobjects that keep the store (to make their numbers later) share it
        # with their copies: copying the cache would copy every text made.
        return self

    def text(self, content: str, em: float, color: str, *, serif: bool = False,
             italic: bool = False) -> Text:
        """``content`` with an em of ``em`` scene units in ``color``, in the numbers'
        face or (``serif``) in the face of names; the names in it written as the boxes
        set them (names.subscripted: W₁, not W1)."""
        content = subscripted(content)
        key = ("text", content, round(em, 5), color, serif, italic)
        if not self._found(key):
            made = _slim(QuickText(content, font=self.name_font if serif else self.font,
                              font_size=em / EM_PER_FONT_SIZE, color=color,
                              slant=ITALIC if italic else "NORMAL"))
            made.em = em  # (what the clip's tests read the type's size from)
            self._keep(key, made)
        return pickle.loads(self._made[key])

    def heading(self, heading: Heading, em: float, color: str) -> MarkupText:
        """A box's heading typeset as the figure's (typeset.runs): one-letter names in
        italics, an index as a subscript, words and operators upright, in the names'
        serif; ``plain`` keeps its text without markup (for reading it back)."""
        key = ("heading", heading, round(em, 5), color)
        if not self._found(key):
            markup = {"text": escape, "name": lambda part: f"<i>{escape(part)}</i>"
                      if len(part) == 1 else escape(part),
                      "index": lambda part: f"<sub>{escape(part)}</sub>"}
            pieces = runs(heading.text)
            if heading.named and IDENTIFIER.fullmatch(heading.text):
                # A name is set in italics whole, as the figure sets it (name_html).
                base, sub = name_parts(heading.text)
                pieces = [("italic", base), *([("index", sub)] if sub else [])]
            markup["italic"] = lambda part: f"<i>{escape(part)}</i>"
            made = _slim(MarkupText("".join(markup[kind](part) for kind, part in pieces),
                                    font=self.name_font, font_size=em / EM_PER_FONT_SIZE,
                                    color=color))
            made.em = em
            made.plain = "".join(part for _, part in pieces)
            self._keep(key, made)
        return pickle.loads(self._made[key])

    def math(self, tex: str, fallback: str, em: float, color: str) -> VMobject:
        """``tex`` typeset by LaTeX, or ``fallback`` as plain Unicode text without LaTeX,
        with an em of ``em`` scene units."""
        key = ("math", tex, fallback, round(em, 5), color)
        if not self._found(key):
            self.typeset([(tex, fallback)], em, color)
        return pickle.loads(self._made[key])

    def typeset(self, formulas: Sequence[tuple[str, str]], em: float, color: str) -> None:
        """Make ``(tex, fallback)`` formulas for ``math``, with one LaTeX run for all.

        Each LaTeX run costs about half a second, so the formulas go into one
        document, a line each, and come back apart as its parts. A formula
        LaTeX cannot set (or every one, without LaTeX) is set as Unicode text.
        """
        size = em / EM_PER_FONT_SIZE
        todo = [(tex, text) for tex, text in dict.fromkeys(formulas)
                if not self._found(("math", tex, text, round(em, 5), color))]
        parts: list[VMobject | None] = [None] * len(todo)
        if self._latex and todo:
            lines = [piece for tex, _ in todo for piece in (tex, r"\\")][:-1]
            try:
                document = MathTex(*lines, color=color, font_size=size)
                parts = [VGroup(*document[2 * i]) for i in range(len(todo))]
            except Exception:  # manim raises several kinds for a LaTeX failure
                parts = [self._one_formula(tex, size, color) for tex, _ in todo]
        for (tex, text), part in zip(todo, parts, strict=True):
            made = part if part is not None and len(part) else QuickText(
                subscripted(text), font=self.font, font_size=size, color=color)
            self._keep(("math", tex, text, round(em, 5), color), _slim(made))

    def _found(self, key: tuple) -> bool:
        """Whether the text ``key`` was made, here or (kept_texts) by an earlier clip."""
        if key in self._made:
            return True
        kept = self._disk.get(key)
        if kept is not None:
            self._made[key] = kept
        return kept is not None

    def _keep(self, key: tuple, made: VMobject) -> None:
        self._made[key] = _kept(made)
        self._disk.put(key, self._made[key])

    def _one_formula(self, tex: str, size: float, color: str) -> VMobject | None:
        try:
            return MathTex(tex, color=color, font_size=size)
        except Exception:  # LaTeX cannot set it: the caller sets the Unicode text
            return None


def _kept(mobject: VMobject) -> bytes:
    """A made text as the store keeps it (a mobject's every part is plain data:
    points, colours, numbers and strings, which pickle as they are)."""
    return pickle.dumps(mobject, protocol=pickle.HIGHEST_PROTOCOL)


def _slim(mobject: VMobject) -> VMobject:
    """Drop what a text keeps from parsing its SVG once its points are made: each
    glyph's path object, and the table of the SVG's groups by id (manim reads both
    only while it builds the text).

    Copying a Text otherwise deep-copies them all, and a clip copies its texts
    thousands of times (a Transform copies its mobject and its target): 150 ms
    for a sentence instead of 12 without the paths, and five times less again
    without the table (whose groups are not the text's own parts).
    """
    for part in mobject.get_family():
        if getattr(part, "path_obj", None) is not None:
            part.path_obj = None
        if getattr(part, "id_to_vgroup_dict", None):
            part.id_to_vgroup_dict = {}
    return mobject


class Table(VGroup):
    """A number, or a bracketed table of numbers, as the SVG draws it.

    ``cells`` is a grid of strings (``format_array``'s layout: a vector is a
    column); ``widths`` fixes the column widths so that a gradient's running
    sum and its final value line up in the same slots.
    """

    def __init__(self, cells: Sequence[Sequence[str]], store: TextStore, em: float,
                 color: str, *, bracketed: bool,
                 widths: Sequence[float] | None = None,
                 dead: np.ndarray | None = None, dead_color: str | None = None,
                 dead_fill: str | None = None, backdrop: str | None = None,
                 centred: bool = False) -> None:
        super().__init__()
        self.em = em
        rows = len(cells)
        # Which cells show a dead entry: the cells are laid out as format_array
        # lays them out, so its grid of indices maps each cell to its entry.
        dead = [[False] * len(row) for row in cells] if dead is None else dead_cells(dead)
        texts = [[store.text(cell.replace("-", "−"), em,
                             dead_color if dead[i][j] else color) if cell else VMobject()
                  for j, cell in enumerate(row)] for i, row in enumerate(cells)]
        widths = list(widths or table_widths(texts))
        self.widths = widths
        row_height = ROW_PITCH * em
        pad = COLUMN_GAP * em
        total_width = sum(widths) + pad * (len(widths) - 1)
        top = rows * row_height / 2
        self.entries = VGroup()
        self.dead_marks = VGroup()
        for i, row in enumerate(texts):
            y = top - (i + 0.5) * row_height
            x = -total_width / 2
            for j, text in enumerate(row):
                # Numbers are right-aligned in their column, as the SVG sets a gradient's;
                # ``centred``, centred, as it sets a value's.
                text.move_to([x + widths[j] - text.width / 2, y, 0])
                if cells[i][j] in "⋮⋱…" or centred:
                    text.move_to([x + widths[j] / 2, y, 0])
                if dead[i][j]:
                    mark = RoundedRectangle(corner_radius=0.1 * em, width=widths[j] + 0.3 * em,
                                            height=row_height * 0.9, stroke_width=0)
                    mark.set_fill(dead_fill, 1).move_to([x + widths[j] / 2, y, 0])
                    self.dead_marks.add(mark)
                self.entries.add(text)
                x += widths[j] + pad
        self.add(self.dead_marks, self.entries)
        if bracketed:
            # In the numbers' colour, as the SVG rules its bracket cells.
            inset = MATRIX_INSET if len(widths) > 1 else VECTOR_INSET
            self.add(_brackets(total_width + 2 * inset * em, rows * row_height, em, color))
        if backdrop is not None:
            # A plate under a label that sits on an edge, as graphviz's label fill.
            plate = RoundedRectangle(corner_radius=0.15 * em, width=self.width + 0.4 * em,
                                     height=self.height + 0.2 * em, stroke_width=0)
            plate.set_fill(backdrop, 1).move_to(self.get_center())
            self.add_to_back(plate)


def table_widths(texts: Sequence[Sequence[VMobject]]) -> list[float]:
    """The width of each column of a grid of texts: its widest entry."""
    return [max(row[j].width for row in texts) for j in range(len(texts[0]))]


def _brackets(width: float, height: float, em: float, color: str) -> VGroup:
    """Square brackets around a ``width`` x ``height`` table, centred on the origin."""
    tick = BRACKET_SERIF * em
    w, h = width / 2, height / 2
    left = VMobject().set_points_as_corners([[-w + tick, h, 0], [-w, h, 0], [-w, -h, 0],
                                            [-w + tick, -h, 0]])
    right = VMobject().set_points_as_corners([[w - tick, h, 0], [w, h, 0], [w, -h, 0],
                                             [w - tick, -h, 0]])
    # 1 pt at 14 pt numbers, as the SVG's bracket cells are ruled.
    return VGroup(left, right).set_stroke(color, width=max(0.6, 100 * em / VALUE_PT))


class ValueNode(VGroup):
    """A value's rounded box with its name; its numbers are made on demand.

    The box is split as in the SVG: the forward value on the left, the
    gradient on the right (past a thin rule, for plain numbers).
    ``data_slot`` and ``grad_slot`` are the centres of the two halves.
    """

    def __init__(self, node: Any, attrs: dict, center: np.ndarray, width: float, height: float,
                 scale: float, theme: Theme, store: TextStore, precision: int,
                 grads: Iterable[Any], gradient_slot: bool = True,
                 others: Iterable[Any] = (), heading: Heading | None = None) -> None:
        super().__init__()
        self.node = node
        self.attrs = attrs
        self.theme = theme
        self.store = store
        self.precision = precision
        self.scale_factor = scale
        self.em = VALUE_PT * scale
        self.heading = heading
        self.has_gradient_slot = gradient_slot
        fill = theme.param_fill if attrs["role"] == "param" else theme.node_fill
        self.frame = RoundedRectangle(corner_radius=min(width, height) * 0.16, width=width,
                                      height=height)
        self.frame.set_fill(fill, 1).set_stroke(theme.node_line, width=pen_width(NODE_PEN, scale))
        self.frame.move_to(center)
        self.add(self.frame)
        shape = tuple(attrs["shape"])
        self.data_cells = format_array(attrs["data"], precision, MAX_ITEMS)
        self.bracketed = len(shape) > 0
        data = Table(self.data_cells, store, self.em, theme.text, bracketed=self.bracketed)
        # Columns wide enough for the other values this box will show (later passes').
        data_tables = [data, *(Table(format_array(x, precision, MAX_ITEMS), store, self.em,
                                     theme.text, bracketed=self.bracketed) for x in others)]
        self.data_widths = _widest_columns(data_tables) if len(data_tables) > 1 else None
        data_width = max(t.width for t in data_tables)
        # Columns wide enough for every gradient this box will show.
        grad_tables = [Table(format_array(g, precision, MAX_ITEMS), store, self.em, theme.grad,
                             bracketed=self.bracketed) for g in grads]
        self.grad_widths = _widest_columns(grad_tables)
        # A value that never shows a gradient (an input that needs none) has no slot for
        # one, as the figure sizes its box: its value is centred in it.
        gradient_slot = self.has_gradient_slot = gradient_slot and bool(grad_tables)
        grad_width = max((t.width for t in grad_tables), default=0.0) if gradient_slot else 0.0
        gap = (ARRAY_GAP if self.bracketed else NUMBER_GAP) * self.em if gradient_slot else 0.0
        content_width = data_width + gap + grad_width
        header = self._header_height() if heading is not None else 0.0
        body_y = center[1] - height / 2 + (height - header) / 2 if heading else center[1]
        left = center[0] - content_width / 2
        self.data_slot = np.array([left + data_width / 2, body_y, 0])
        self.grad_slot = np.array([left + data_width + gap + grad_width / 2, body_y, 0])
        # A rule parts two plain numbers; arrays are parted by their brackets.
        self.rule: Line | None = None
        if gradient_slot and not self.bracketed:
            rule_x = left + data_width + gap / 2
            half = ROW_PITCH * self.em / 2
            self.rule = Line([rule_x, body_y - half, 0], [rule_x, body_y + half, 0])
            self.rule.set_stroke(theme.node_line, width=pen_width(RULE_PEN, scale))
            self.add(self.rule)
        self.name: VMobject | None = None
        if heading is not None:
            # A name in the text's colour, an expression in the headings' grey and size,
            # as the figure sets them.
            em = (NAME_PT if heading.named else EXPRESSION_PT) * scale
            self.name = store.heading(heading, em, theme.text if heading.named
                                      else theme.muted)
            if self.name.width > 0.94 * width:
                self.name.scale(0.94 * width / self.name.width)
            self.name.move_to([center[0], center[1] + height / 2 - header / 2
                               - 0.1 * self.em, 0])
            self.add(self.name)

    def _header_height(self) -> float:
        return 1.35 * NAME_PT * self.scale_factor

    def data_label(self, data: Any = None) -> Table:
        """The forward value in the SVG's colours, placed in its slot: the value's own, or
        ``data`` (what another pass of a training loop held in it)."""
        cells = self.data_cells if data is None else format_array(data, self.precision,
                                                                   MAX_ITEMS)
        table = Table(cells, self.store, self.em, self.theme.text, bracketed=self.bracketed,
                      widths=self.data_widths, centred=True)
        return table.move_to(self.data_slot).set_z_index(Z_NUMBER)

    def grad_label(self, grad: Any, dead: np.ndarray | None = None) -> Table:
        """A gradient (running or final) in blue in the gradient slot; dead entries red."""
        table = Table(format_array(grad, self.precision, MAX_ITEMS), self.store, self.em,
                      self.theme.grad, bracketed=self.bracketed,
                      widths=self.grad_widths,
                      dead=dead, dead_color=self.theme.dead_text, dead_fill=self.theme.dead_fill)
        return table.move_to(self.grad_slot).set_z_index(Z_NUMBER)


def _widest_columns(tables: Sequence[Table]) -> list[float] | None:
    if not tables:
        return None
    return [max(t.widths[j] for t in tables) for j in range(len(tables[0].widths))]


def pen_width(points: float, scale: float) -> float:
    """A graphviz pen width (points) as a manim stroke width at this scale.

    Manim's stroke width 1 is 1/100 of a scene unit; a point is ``scale`` units.
    """
    return max(0.5, points * scale * 100)


class OpNode(VGroup):
    """An op's circle with its symbol; a ReLU with dead units has a dashed red outline. A
    module's operator that holds its parameters (views.py) is the figure's ellipse
    (``height`` tall), its parameters' rows under its name, their gradients (``held``)
    hidden until its step shows them."""

    def __init__(self, node: Any, attrs: dict, center: np.ndarray, radius: float, scale: float,
                 theme: Theme, store: TextStore, height: float | None = None,
                 precision: int = 4, kind: str | None = None) -> None:
        super().__init__()
        self.node = node
        self.attrs = attrs
        self.dead = bool(np.any(attrs.get("dead", False)))  # a gate (a ReLU) with dead units
        rows = held_rows(attrs, precision) if attrs.get("parameters") else []
        self.circle = (Ellipse(width=2 * radius, height=height) if rows and height else
                       Circle(radius=radius)).move_to(center)
        self.circle.set_fill(theme.op_fill, 1)
        self.circle.set_stroke(theme.op_line, width=pen_width(NODE_PEN, scale))
        symbol = attrs["symbol"]
        self.symbol = store.text(symbol, symbol_pt(symbol) * scale, theme.text).move_to(center)
        if self.symbol.width > 1.6 * radius:
            self.symbol.scale(1.6 * radius / self.symbol.width)
        self.add(self.circle, self.symbol)
        self.held = VGroup()
        if kind or rows:  # a module's: its name over its class and its parameters' rows,
            # centred; their gradients hidden
            lines = VGroup(*(VGroup(store.text(words, VALUE_PT * scale, theme.muted),
                                    store.text(number, VALUE_PT * scale, theme.grad))
                             .arrange(buff=0.6 * VALUE_PT * scale) for words, number in rows))
            if kind:
                lines.submobjects.insert(0, store.text(kind, LABEL_PT * scale, theme.muted))
            block = VGroup(self.symbol, lines.arrange(DOWN, buff=0.3 * VALUE_PT * scale))
            block.arrange(DOWN, buff=0.3 * VALUE_PT * scale).move_to(center)
            if block.width > 1.5 * radius:
                block.scale(1.5 * radius / block.width)
            self.held = VGroup(*(line[1] for line in lines[1 if kind else 0:])).set_opacity(0)
            self.add(lines.set_z_index(Z_NUMBER))  # (over the ring that marks the current op)
        if self.dead:
            self.circle.set_stroke(width=0)
            self.add(_dashed_circle(radius, center, theme.dead_line, pen_width(DEAD_PEN, scale)))


def _dashed_circle(radius: float, center: np.ndarray, color: str, width: float) -> VGroup:
    """A circle drawn in 16 dashes (cheaper to render than manim's DashedVMobject)."""
    dashes = 16
    return VGroup(*(Arc(radius=radius, start_angle=k * TAU / dashes, angle=0.55 * TAU / dashes,
                        arc_center=center).set_stroke(color, width=width)
                    for k in range(dashes)))


class EdgeArrow(VGroup):
    """An edge as graphviz routes it: its cubic Bezier curve and its arrowhead."""

    def __init__(self, key: tuple, points: Sequence[np.ndarray],
                 head: Sequence[np.ndarray] | None, color: str, width: float) -> None:
        super().__init__()
        self.key = key
        self.path = VMobject()
        self.path.start_new_path(points[0])
        for i in range(1, len(points) - 2, 3):
            self.path.add_cubic_bezier_curve_to(points[i], points[i + 1], points[i + 2])
        self.path.set_stroke(color, width=width).set_fill(opacity=0)
        self.add(self.path)
        self.tip = self.path.get_end()
        if head is not None:
            self.head = Polygon(*head).set_fill(color, 1).set_stroke(color, width=width * 0.5)
            self.tip = np.array(head[0])
            self.add(self.head)

    def backward_path(self) -> VMobject:
        """The curve run from the arrowhead back to the tail (a gradient's way)."""
        reverse = self.path.copy()
        reverse.reverse_points()
        # Start at the tip of the arrowhead, where the gradient enters the edge.
        return _prepend_line(reverse, self.tip)

    def forward_path(self) -> VMobject:
        """The curve from the tail to the arrowhead's tip (a value's way)."""
        forward = self.path.copy()
        forward.add_line_to(self.tip)
        return forward


class LoopArrow(EdgeArrow):
    """A rolled loop's back edge (rolling.py), as the figure draws it: dashed, from the
    block's output to the box it enters the next repetition as, with ``mark`` (its
    count, ``⟲ ×3``) where graphviz put the label. ``path`` is its whole curve, along
    which motion runs; the dashes are what is drawn."""

    def __init__(self, key: tuple, points: Sequence[np.ndarray],
                 head: Sequence[np.ndarray] | None, color: str, width: float,
                 mark: VMobject, dash: float) -> None:
        super().__init__(key, points, head, color, width)
        self.remove(self.path)
        count = max(6, round(self.path.get_arc_length() / dash))
        self.dashes = DashedVMobject(self.path, num_dashes=count, dashed_ratio=0.55)
        self.mark = mark
        self.add(self.dashes, mark)


def _prepend_line(path: VMobject, start: np.ndarray) -> VMobject:
    """``path`` with a straight piece from ``start`` to its first point in front."""
    joined = VMobject()
    joined.start_new_path(start)
    joined.add_line_to(path.get_start())
    joined.append_points(path.points)
    return joined.match_style(path)


class GraphMobject(VGroup):
    """The whole graph as the SVG draws it, placed in a rectangle of the scene.

    ``values``, ``ops`` and ``edges`` map IR ids (and edge keys) to their
    mobjects; ``point(x, y)`` maps graphviz coordinates (points, y up) to
    scene coordinates, so that anything drawn from the layout lines up.
    """

    def __init__(self, G: nx.MultiDiGraph, layout: Any, theme: Theme, store: TextStore, *,
                 center: Sequence[float] = (0, 0, 0), max_width: float = 13.0,
                 max_height: float = 6.0, max_scale: float = 0.045, min_scale: float = 0.0,
                 precision: int = 4,
                 grads: dict[Any, list] | None = None, gradient_slot: bool = True,
                 others: dict[Any, list] | None = None,
                 names: dict[Any, Heading] | None = None,
                 plain: Iterable[Any] = ()) -> None:
        super().__init__()
        self.G = G
        self.layout = layout
        self.theme = theme
        self.store = store
        # Fit the rectangle, but no smaller than min_scale (wider or taller than the
        # rectangle if need be: the camera shows a run of its columns at a time, as
        # high as what lies across them, and zooms out for a column taller than that).
        self.scale_factor = min(max(max_width / layout.width, min_scale),
                                max(max_height / layout.height, min_scale), max_scale)
        self.origin = np.array(center, dtype=float)
        s = self.scale_factor
        grads, others, names, plain = grads or {}, others or {}, names or {}, set(plain)
        self.values: dict[Any, ValueNode] = {}
        self.ops: dict[Any, OpNode] = {}
        self.edges: dict[tuple, EdgeArrow] = {}
        self.loops: dict[tuple, LoopArrow] = {}  # a rolled loop's back edges
        edge_width = pen_width(EDGE_PEN, s)
        for key, edge in layout.edges.items():
            if edge.loop:
                edge = _lowered(edge, layout)
            # An edge the figure runs through its badge is one smooth curve here: the
            # contribution moves along it rather than sitting in a kink.
            points = [self.point(*p) for p in (_smooth(edge.points) if edge.badge
                                                 else edge.points)]
            head = [self.point(*p) for p in _arrowhead(edge)] if edge.arrow_end else None
            if edge.loop:
                mark = store.text(f"⟲ ×{G.graph.get('loop_count')}", NAME_PT * s, theme.text)
                if edge.label is not None:
                    mark.move_to(self.point(*edge.label))
                self.loops[key] = LoopArrow(key, points, head, theme.text,
                                            pen_width(CURRENT_EDGE_PEN, s), mark, 8 * s)
                continue
            self.edges[key] = EdgeArrow(key, points, head, theme.edge, edge_width)
        for node, attrs in G.nodes(data=True):
            box = layout.nodes[node]
            center_point = self.point(box.x, box.y)
            if attrs["kind"] == "value":
                self.values[node] = ValueNode(node, attrs, center_point, box.width * s,
                                              box.height * s, s, theme, store, precision,
                                              grads.get(node, ()),
                                              gradient_slot and node not in plain,
                                              others.get(node, ()), names.get(node))
            else:
                self.ops[node] = OpNode(node, attrs, center_point, box.width * s / 2, s,
                                        theme, store, box.height * s, precision,
                                        G.graph.get("module_classes", {}).get(attrs["symbol"]))
        self.add(*self.edges.values(), *self.loops.values(), *self.values.values(),
                 *self.ops.values())

    def point(self, x: float, y: float) -> np.ndarray:
        """Scene coordinates of the layout point (x, y) (graphviz points, y up)."""
        s = self.scale_factor
        return self.origin + np.array([(x - self.layout.width / 2) * s,
                                       (y - self.layout.height / 2) * s, 0.0])


def _smooth(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The route ``points`` (cubic Bezier control points) with its straight runs across
    a badge (a cubic whose controls are its ends) bent to leave and arrive in the
    directions of the curves either side: the same route, without its kinks."""
    smooth = [np.array(p, dtype=float) for p in points]
    for i in range(0, len(smooth) - 3, 3):
        start, first, last, end = smooth[i:i + 4]
        if not (np.allclose(first, start) and np.allclose(last, end)) or i == 0 \
                or i + 4 >= len(smooth):
            continue
        reach = np.linalg.norm(end - start) / 3

        def heading(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return (b - a) / max(float(np.linalg.norm(b - a)), 1e-9)

        smooth[i + 1] = start + heading(smooth[i - 1], start) * reach
        smooth[i + 2] = end - heading(end, smooth[i + 4]) * reach
    return [tuple(p) for p in smooth]


# How far (points) over the boxes it spans a loop's back edge is drawn in a clip.
LOOP_CLEARANCE = 24.0


def _lowered(edge: EdgePath, layout: Layout) -> EdgePath:
    """A rolled loop's back edge brought down to arc just over the boxes it spans.

    dot routes it high over the whole block (a third of the figure's height on an
    RNN): counted in the camera's views, it set every step at the whole graph's size;
    left out, it ran off the frame with its count. Its rise over its higher end is
    scaled down, its ends and the boxes where dot put them."""
    points = list(edge.points)
    low, high = min(x for x, _ in points), max(x for x, _ in points)
    base = max(points[0][1], points[-1][1], edge.arrow_end[1] if edge.arrow_end else -np.inf)
    peak = _curve_top(points)  # (the curve's, below its control points')
    top = max((box.y + box.height / 2 for box in layout.nodes.values()
               if box.x + box.width / 2 >= low and box.x - box.width / 2 <= high),
              default=base)
    wanted = max(top, base) + LOOP_CLEARANCE
    if peak <= wanted:
        return edge
    factor = (wanted - base) / (peak - base)

    def lower(point: tuple[float, float] | None) -> tuple[float, float] | None:
        if point is None or point[1] <= base:
            return point
        return point[0], base + (point[1] - base) * factor

    # (its count as far over the arc's top as dot set it)
    lowered = [lower(p) for p in points]
    label = edge.label and (edge.label[0], _curve_top(lowered) + edge.label[1] - peak)
    return replace(edge, points=lowered, arrow_start=lower(edge.arrow_start), label=label)


def _curve_top(points: Sequence[tuple[float, float]]) -> float:
    """The highest y of the cubic Bezier curve through ``points`` (1 + 3n of them)."""
    t = np.linspace(0.0, 1.0, 17)[:, None]
    ys = [((1 - t) ** 3 * a + 3 * (1 - t) ** 2 * t * b + 3 * (1 - t) * t ** 2 * c + t ** 3 * d)
          for a, b, c, d in (np.array(points[i:i + 4])[:, 1]
                             for i in range(0, len(points) - 3, 3))]
    return float(max(np.max(y) for y in ys)) if ys else max(y for _, y in points)


def _arrowhead(edge: Any) -> list[tuple[float, float]]:
    """Graphviz's "normal" arrowhead: a triangle from the spline's end to the tip,
    as wide as 0.35 of its length on each side."""
    base = np.array(edge.arrow_start, dtype=float)
    tip = np.array(edge.arrow_end, dtype=float)
    along = tip - base
    across = np.array([-along[1], along[0]]) * 0.35
    return [tuple(tip), tuple(base + across), tuple(base - across)]
