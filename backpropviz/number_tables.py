"""Numbers as graphviz's HTML-like tables: the grids of a value's box and of an edge's badge."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from html import escape
from typing import Any

import numpy as np

from .formatting import (
    MAX_ITEMS,
    display_number,
    format_array,
    grid_indices,
    held_rows,
    summarized,
)
from .metrics import advance, text_width
from .style import VALUE_PT, Theme

__all__ = ["PADDING", "column_widths", "contribution_html", "grid_html", "grid_texts",
           "held_html", "lone_width", "number_html"]


PADDING = 2  # points inside a number's cell, on every side


@lru_cache(maxsize=1 << 16)
def _scalar_text(x: float, precision: int) -> str:
    # A number recurs: a value's last running sum is its gradient, and every
    # picture of a backward pass shows the same numbers again.
    return display_number(x, precision)


def grid_texts(x: Any, precision: int) -> tuple[list[list[str]], list[list[Any]]]:
    """The texts of a number or array as laid out, and the array index of each cell."""
    if type(x) is float:  # the common case, a scalar Value: no numpy on the way
        return [[_scalar_text(x, precision)]], [[()]]
    if summarized(np.shape(x)):  # its shape and norm: no cell is an entry
        return format_array(x, precision), [[None], [None]]
    array = np.asarray(x, dtype=np.float64)
    grid = grid_indices(array.shape, MAX_ITEMS)
    texts = [[cell if isinstance(cell, str) else display_number(array[cell], precision)
              for cell in row] for row in grid]
    return texts, [[None if isinstance(cell, str) else cell for cell in row] for row in grid]


def column_widths(grids: Sequence[list[list[str]]], size: float) -> list[int]:
    """Minimum cell widths (points) that fit every grid's texts, column by column.

    A gradient cell is sized for every number it will ever show (partial sums
    and the final one), so the layout is the same at every backward step.
    """
    widths: list[float] = []
    for grid in grids:
        for row in grid:
            for column, text in enumerate(row):
                width = text_width(text, size, "numbers")
                if column == len(widths):
                    widths.append(width)
                widths[column] = max(widths[column], width)
    return [_cell_width(width) for width in widths]


def lone_width(numbers: Sequence[float], precision: int, size: float) -> int:
    """column_widths of the grids of scalars ``numbers``: the width of their one column."""
    widest = max([_number_advance(x, precision) for x in numbers])
    return _cell_width(widest * size / 1000)  # (text_width's)


@lru_cache(maxsize=1 << 16)
def _number_advance(x: float, precision: int) -> int:
    """The advance of a scalar's text (metrics.advance): a number recurs, as its text does."""
    return advance(_scalar_text(x, precision), "numbers")


def _cell_width(text_points: float) -> int:
    # 8% for hinting and kerning, then the cell's padding on both sides.
    return math.ceil(text_points * 1.08) + 2 * PADDING + 1


@lru_cache(maxsize=1 << 10)
def _font_tag(color: str, size: float) -> str:
    """The opening tag of typeset.font's run in ``color`` at ``size``."""
    return f'<FONT COLOR="{color}" POINT-SIZE="{size:g}">'


@lru_cache(maxsize=1 << 10)
def _table_tag(spacing: int, fill: str | None) -> str:
    bg = f' BGCOLOR="{fill}"' if fill else ""
    return (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="{spacing}" '
            f'CELLPADDING="{PADDING}"{bg}>')


def _cell(text: str, index: Any, color: str, theme: Theme, size: float, width: int | None,
          dead: np.ndarray | None, hidden: bool) -> str:
    """One number's cell (its ``text`` escaped already): numbers right, ellipses centred, a
    slice's "[0,1]" left; a dead entry on the dead fill; a hidden one blank."""
    width_attr = f' WIDTH="{width}"' if width is not None else ""
    body = " " if hidden or not text else text
    if not hidden and dead is not None and index is not None and dead[index]:
        return (f'<TD ALIGN="RIGHT"{width_attr} BGCOLOR="{theme.dead_fill}">'
                f"{_font_tag(theme.dead_text, size)}{body}</FONT></TD>")
    align = "RIGHT" if index is not None else "LEFT" if text[:1] == "[" else "CENTER"
    return f'<TD ALIGN="{align}"{width_attr}>{_font_tag(color, size)}{body}</FONT></TD>'


def number_html(x: float, precision: int, color: str, theme: Theme, *, size: float = VALUE_PT,
                index: tuple | None = None, dead: np.ndarray | None = None,
                width: int | None = None, fill: str | None = None, hidden: bool = False) -> str:
    """grid_html of a scalar's number ``x`` (its ``index`` the cell's, ``()``; or None), made
    without its grid: most boxes hold one. (A number's text needs no escaping.)"""
    cell = _cell(_scalar_text(x, precision), index, color, theme, size, width, dead, hidden)
    return f"{_table_tag(0, None if hidden else fill)}<TR>{cell}</TR></TABLE>"


def grid_html(texts: list[list[str]], color: str, theme: Theme, *, size: float = VALUE_PT,
              indices: list[list[Any]] | None = None, dead: np.ndarray | None = None,
              widths: list[int] | None = None, fill: str | None = None,
              brackets: bool = False, hidden: bool = False) -> str:
    """A grid of numbers in ``color``, bracketed if an array; dead entries marked.

    ``hidden`` keeps the grid's size but shows nothing: a gradient not yet
    computed at this backward step.
    """
    if len(texts) == 1 and len(texts[0]) == 1 and not brackets:  # one number, as number_html
        cell = _cell(escape(texts[0][0]), indices[0][0] if indices else None, color, theme,
                     size, widths[0] if widths else None, dead, hidden)
        return f"{_table_tag(0, None if hidden else fill)}<TR>{cell}</TR></TABLE>"
    table = _table_tag(2 if len(texts[0]) > 1 else 0,  # a little air between columns
                       fill if not hidden else None)
    rows = [[_cell(escape(text), indices[r][c] if indices else None, color, theme, size,
                   widths[c] if widths else None, dead, hidden)
             for c, text in enumerate(row)] for r, row in enumerate(texts)]
    if brackets:
        # Thin rules on the outer sides of a narrow first and last column.
        line = "transparent" if hidden else color
        span = f'ROWSPAN="{len(rows)}" WIDTH="4" BORDER="1" COLOR="{line}"'
        rows[0] = [f'<TD {span} SIDES="LTB"></TD>', *rows[0], f'<TD {span} SIDES="RTB"></TD>']
    return table + "".join("<TR>" + "".join(cells) + "</TR>" for cells in rows) + "</TABLE>"


def contribution_html(contribution: Any, precision: int, theme: Theme, size: float,
                      dead: np.ndarray | None, hidden: bool) -> str:
    """The numbers on an edge: what it sent back, in its badge's fill; its dead entries
    marked; ``hidden`` (kept in place, unseen) until the edge has sent it."""
    if type(contribution) is float:  # a scalar's: one number
        return number_html(contribution, precision, theme.grad, theme, size=size, index=(),
                           dead=dead, width=lone_width([contribution], precision, size),
                           fill=theme.text_fill, hidden=hidden)
    texts, indices = grid_texts(contribution, precision)
    return grid_html(texts, theme.grad, theme, size=size, indices=indices, dead=dead,
                     widths=column_widths([texts], size), fill=theme.text_fill,
                     brackets=bool(np.ndim(contribution))
                     and not summarized(np.shape(contribution)), hidden=hidden)


def held_html(op: dict, precision: int, theme: Theme, *, size: float = VALUE_PT,
              hidden: bool = False) -> str:
    """The parameters a module's operator (attributes ``op``) holds, as written under its
    name (formatting.held_rows). The gradients' cells keep their width but are blank
    (``hidden``) until the module's step has sent them."""
    cells = []
    for name, number in held_rows(op, precision):
        width = _cell_width(text_width(number, size, "numbers"))
        cells.append(f'<TR><TD ALIGN="LEFT">{_font_tag(theme.muted, size)}{escape(name)}'
                     f'</FONT></TD><TD ALIGN="RIGHT" WIDTH="{width}">'
                     f'{_font_tag(theme.grad, size)}{" " if hidden else escape(number)}</FONT>'
                     "</TD></TR>")
    return _table_tag(0, None) + "".join(cells) + "</TABLE>"
