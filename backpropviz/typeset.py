"""Names and equations as graphviz's HTML-like labels: one typesetting for boxes,
headings, continuation marks and the step slides' equations."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import escape
from typing import Any

from .captions import ENGINE_NOTES
from .graphviz import SUBSCRIPT_SCALE
from .metrics import text_width
from .names import IDENTIFIER, name_parts
from .style import EXPRESSION_PT, LEGEND_PT, NAME_FONT, NAME_PT, Theme

__all__ = ["GAP", "caption_runs", "equation_cells", "equation_height", "equation_width",
           "expression_html", "font", "name_html", "runs"]

GAP = "&#160;"  # a space graphviz keeps (it trims plain ones at the ends of a run)

# A number or array as a caption writes it (captions.number_text): a column
# [1; −2], a matrix by rows [2, −1; 0, 1], entries plain numbers (not 1[z>0]).
_ENTRY = r"[−-]?(?:\d+(?:\.\d*)?(?:e[+−-]?\d+)?|inf|nan)"
_MATRIX = re.compile(rf"\[({_ENTRY}(?:(?:, |; ){_ENTRY})*)\]")
# How much taller than a line a typeset array's row is (its padding and spacing).
_ROW_SPACING = 1.45


def font(text: str, color: str, size: float | None = None, face: str | None = None) -> str:
    extra = f' POINT-SIZE="{size:g}"' if size else ""
    extra += f' FACE="{face}"' if face else ""
    # (a lone "]" graphviz's HTML reader takes for the end of the attribute list)
    return f'<FONT COLOR="{color}"{extra}>{"&#93;" if text == "]" else text}</FONT>'


def expression_html(text: str, theme: Theme, color: str | None = None,
                     pt: float = EXPRESSION_PT) -> str:
    """An expression heading typeset as the boxes' names are: ``W1 x + b1`` as
    W₁ x + b₁, ``lambd/2`` as λ/2, one-letter names in italics, words (relu,
    tanh) upright; in the headings' grey unless ``color``."""
    return font(_typeset(text, lambda part: escape(part).replace(" ", GAP)),
                color or theme.muted, pt, NAME_FONT)


def equation_cells(text: str, color: str, pt: float) -> str:
    """A caption's equation (``∂L/∂W1 = ∂L/∂z · xᵀ = …``) as the cells of a table row,
    set as the book sets its mathematics: in the names' serif, the names typeset as
    the boxes' are (italic, W₁ with its subscript), numbers and words upright, and
    each array in brackets as the boxes draw one. (One family for the whole line:
    graphviz places each run of a label by its own estimate of the run's width, and
    runs of two families drift apart.)"""
    note = next((text.index(opening) for opening in ENGINE_NOTES if opening in text), None)
    words = "" if note is None else text[note:]  # (what an engine did: words, its "a" no name)
    text = text if note is None else text[:note]
    cells = "".join(f"<TD>{_equation_text(piece, color, pt)}</TD>" if isinstance(piece, str)
                    else _array_cell(piece, color, pt) for piece in _equation_pieces(text))
    if words:
        cells += f"<TD>{font(escape(words).replace(' ', GAP), color, pt, NAME_FONT)}</TD>"
    return cells


def equation_height(text: str, pt: float) -> int:
    """The height (pt) a row must have to hold an equation as equation_html sets it."""
    return round(_ROW_SPACING * pt * _array_lines(text) + 4)


def equation_width(text: str, pt: float) -> float:
    """How wide (pt) an equation sets as equation_cells sets it, about: its text in
    the serif it is set in (a subscript, set smaller, counted full size), each array
    as its widest entry of each column (measured in the wider sans), the cells'
    padding and spacing, and its brackets."""
    width = 0.0
    for piece in _equation_pieces(text):
        if isinstance(piece, str):
            width += text_width(piece, pt, "serif") + 2
            continue
        columns = [max(text_width(row[c], pt) for row in piece if c < len(row)) + 2
                   for c in range(max(len(row) for row in piece))]
        # (_array_cell's: the brackets' cells, and between its cells two points apart
        # if it has more than a column)
        width += sum(columns) + 10 + (2 * (len(columns) + 3) if len(columns) > 1 else 0)
    return width


def _equation_text(text: str, color: str, pt: float) -> str:
    return font(_typeset(text, lambda part: escape(part).replace(" ", GAP), names_only=True),
                color, pt, NAME_FONT)


def _equation_pieces(text: str) -> list[str | list[list[str]]]:
    """An equation cut into its text and its arrays, each array as rows of entries:
    ``"a = [1; 2] ⊙ g"`` -> ``["a = ", [["1"], ["2"]], " ⊙ g"]``. A lone number in
    brackets stays text."""
    pieces: list[str | list[list[str]]] = []
    last = 0
    for match in _MATRIX.finditer(text):
        rows = [row.split(", ") for row in match.group(1).split("; ")]
        if len(rows) == 1 and len(rows[0]) == 1:
            continue
        pieces += [text[last:match.start()], rows]
        last = match.end()
    pieces.append(text[last:])
    return [piece for piece in pieces if piece]


def _array_lines(text: str) -> int:
    """How many lines tall an equation is once its arrays are typeset."""
    return max([len(piece) for piece in _equation_pieces(text) if isinstance(piece, list)],
               default=1)


def _array_cell(rows: list[list[str]], color: str, pt: float) -> str:
    """An array as the boxes draw one: a grid of right-aligned numbers between thin
    brackets (rules on the outer sides of a narrow first and last column)."""
    rule = f'ROWSPAN="{len(rows)}" WIDTH="3" BORDER="1" COLOR="{color}"'
    grid = []
    for r, row in enumerate(rows):
        cells = "".join(f'<TD ALIGN="RIGHT">{font(escape(entry), color, pt, NAME_FONT)}</TD>'
                        for entry in row)
        if r == 0:
            cells = f'<TD {rule} SIDES="LTB"></TD>{cells}<TD {rule} SIDES="RTB"></TD>'
        grid.append(f"<TR>{cells}</TR>")
    spacing = 2 if len(rows[0]) > 1 else 0
    return (f'<TD><TABLE BORDER="0" CELLBORDER="0" CELLSPACING="{spacing}" CELLPADDING="1">'
            + "".join(grid) + "</TABLE></TD>")


def runs(text: str, names_only: bool = False) -> list[tuple[str, str]]:
    """``text`` cut into runs to typeset, each ``(kind, text)``: "text" as it is,
    "name" a name's letter or word (one letter set in italics), "index" its index
    (W1 -> ("name", "W"), ("index", "1")). With ``names_only``, a word (the, seed,
    ReLU) stays text. Every view that typesets an equation reads these."""
    parts: list[tuple[str, str]] = []
    last = 0
    for match in IDENTIFIER.finditer(text):
        base, sub = name_parts(match.group())
        if names_only and len(base) > 1 and not sub:
            continue
        parts += [("text", text[last:match.start()]), ("name", base)]
        if sub:
            parts.append(("index", sub))
        last = match.end()
    parts.append(("text", text[last:]))
    return [(kind, part) for kind, part in parts if part]


def caption_runs(text: str) -> list[tuple[Any, ...]]:
    """A caption's line as the page typesets it: runs() of its text (names only),
    and each array (``[0, 0; 2, 4]``) as ``("array", rows of entries, the text)``,
    to be set as the boxes set one and read aloud as written. A lone number in
    brackets stays text. A note on what an engine did (``(but the engine added …``)
    is words: set as text, its "a" not a name."""
    note = next((text.index(opening) for opening in ENGINE_NOTES if opening in text), None)
    if note is not None:
        return [*caption_runs(text[:note]), ("text", text[note:])]
    found: list[tuple[Any, ...]] = []
    last = 0
    for match in _MATRIX.finditer(text):
        rows = [row.split(", ") for row in match.group(1).split("; ")]
        if len(rows) == 1 and len(rows[0]) == 1:
            continue
        found += [*runs(text[last:match.start()], names_only=True),
                  ("array", rows, match.group())]
        last = match.end()
    return found + runs(text[last:], names_only=True)


def _typeset(text: str, between: Callable[[str], str], names_only: bool = False) -> str:
    """``text`` as HTML-like label text (runs()): one-letter names in italics, an
    index as a subscript no smaller than the legend, the text through ``between``."""
    sub_pt = LEGEND_PT / SUBSCRIPT_SCALE  # (portable_svg sets a subscript smaller)
    html = {"text": between,
            "name": lambda part: f"<I>{escape(part)}</I>" if len(part) == 1 else escape(part),
            "index": lambda part: (f'<SUB><FONT POINT-SIZE="{sub_pt:.1f}">{escape(part)}'
                                   "</FONT></SUB>")}
    return "".join(html[kind](part) for kind, part in runs(text, names_only))


def name_html(name: str, theme: Theme) -> str:
    """A name in the book's style: ``W1`` as an italic W with subscript 1; a name
    the script wrote as an expression (``lambd/2``) typeset as headings are."""
    if not IDENTIFIER.fullmatch(name):
        return expression_html(name, theme, theme.text, NAME_PT)
    base, sub = name_parts(name)
    body = f"<I>{escape(base)}</I>" + (f"<SUB>{escape(sub)}</SUB>" if sub else "")
    return font(body, theme.text, NAME_PT, NAME_FONT)
