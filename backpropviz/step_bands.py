"""A step picture's caption band: step k of n, the rule and the worked lines, as DOT."""

from __future__ import annotations

import math
import re
from html import escape

import networkx as nx

from .captions import Caption, step_captions
from .metrics import text_width
from .names import subscripted
from .style import FITTED_TYPE, LEGEND_PT, THEMES, VALUE_PT, Theme
from .typeset import equation_cells, equation_height, equation_width, font

__all__ = ["BAND_CHARS", "band_size", "step_bands", "with_band"]


# A step picture's caption band: lines wrap at this many characters, and
# every step's band has as many lines, and the width, of the largest, so that
# all the steps keep one layout.
BAND_CHARS = 76
_BOLD = 1.1  # how much wider bold sets than regular, at most
_ROW_PT = round(1.7 * VALUE_PT)  # an equation row's height, subscripts and all
_LEGEND_ROW_PT = round(1.8 * LEGEND_PT)  # the rule's row and the key's
_EQUATION_GAP = 2 * VALUE_PT  # between two equations side by side on a row
_KEY_TEXT = " this step  its op and edges,   ◀ blue: the gradients it sends back to the inputs"


def _broken(line: str) -> list[str]:
    """A caption's worked line, broken before an " = " past BAND_CHARS."""
    parts = re.split(r" ([=≈]) ", line)  # (≈ before a result rounded as written)
    pieces, current = [], parts[0]
    for equals, part in zip(parts[1::2], parts[2::2], strict=True):
        if len(current) + 3 + len(part) > BAND_CHARS:
            pieces.append(current)
            current = f"    {equals} " + part
        else:
            current += f" {equals} " + part
    return [*pieces, current]


def _row_width(row: list[str]) -> float:
    """How wide (pt) a band's row of equations sets, _EQUATION_GAP apart."""
    return sum(equation_width(line, VALUE_PT) for line in row) + _EQUATION_GAP * (len(row) - 1)


def _band_rows(caption: Caption, room: float) -> list[list[str]]:
    """A caption's worked lines as the band's rows: whole lines side by side, an
    _EQUATION_GAP apart, while they fit in ``room`` (pt); a line broken (too long for
    one row) on rows of its own. A row is the band's height, and a slide has little."""
    rows: list[list[str]] = []
    used = room  # (the first line starts a row)
    for line in caption.worked:
        pieces = _broken(line)
        width = equation_width(line, VALUE_PT)
        if len(pieces) == 1 and used + _EQUATION_GAP + width <= room:
            rows[-1].append(line)
            used += _EQUATION_GAP + width
            continue
        rows += [[piece] for piece in pieces]
        used = width if len(pieces) == 1 else room
    return rows


def step_bands(G: nx.MultiDiGraph, theme: str | Theme = "light",
               precision: int = 4, room: float | None = None) -> list[str]:
    """The caption band of every step picture of the drawn graph ``G``: step k of
    n, the rule, the equations with the engine's numbers (captions.py), and a
    key to the step's highlight; HTML-like labels, one size for all. Equations are
    set side by side while they fit the band's width, or ``room`` (points, before a
    fitted figure's type grows) if it is wider: the band widened so, but lower."""
    t = THEMES[theme] if isinstance(theme, str) else theme
    captions = step_captions(G, precision)
    pieces = [piece for caption in captions for line in caption.worked
              for piece in _broken(line)]
    last = len(captions) - 1
    # As wide as its widest row on any step (measured as graphviz sets it, a
    # little more for the bold), so that no step's band is wider than another's
    # and the key beneath the lines stays put through a build.
    widest = max([_BOLD * text_width(f"step {k} of {last}", LEGEND_PT)
                  + text_width("  " + subscripted(caption.rule), LEGEND_PT)
                  for k, caption in enumerate(captions)]
                 + [text_width(piece, VALUE_PT) for piece in pieces]
                 + [text_width(_KEY_TEXT, LEGEND_PT) + 12])
    width = int(1.06 * widest + 12)  # (its lines are broken at BAND_CHARS)
    lines = [_band_rows(caption, max(width, room or 0) - 10) for caption in captions]
    width = max([width] + [int(_row_width(row)) + 10 for step in lines for row in step])
    key = (f'<TD BORDER="1" COLOR="{t.highlight_line}" BGCOLOR="{t.highlight_fill}" '
           'STYLE="ROUNDED">'
           f'{font(" this step ", t.text, LEGEND_PT)}</TD>'
           f'<TD>{font(" its op and edges,   ", t.muted, LEGEND_PT)}</TD>'
           f'<TD>{font("◀ blue", t.grad, LEGEND_PT)}</TD>'
           f'<TD>{font(": the gradients it sends back to the inputs", t.muted, LEGEND_PT)}</TD>')
    inner = width - 6  # (the band's cell spacing and padding)
    height = max(len(step) for step in lines)
    # Row i of every step's band as tall as the tallest row i of any step (an array
    # typeset takes as many lines as it has rows): the same size at every step.
    row_pt = [max([_ROW_PT] + [equation_height(line, VALUE_PT)
                               for step in lines if i < len(step) for line in step[i]])
              for i in range(height)]
    gap = f'<TD WIDTH="{round(_EQUATION_GAP)}"></TD>'
    bands = []
    for k, (caption, step) in enumerate(zip(captions, lines, strict=True)):
        rule = (f'<TD><B>{font(f"step {k} of {last}", t.text, LEGEND_PT)}</B></TD>'
                f'<TD>{font(escape("  " + subscripted(caption.rule)), t.muted, LEGEND_PT)}</TD>')
        equations = [gap.join(equation_cells(line, t.text, VALUE_PT) for line in row)
                     for row in step]
        equations += [f'<TD>{font("&#160;", t.text, VALUE_PT)}</TD>'] * (height - len(step))
        # Each row a table of its own size, every step alike, its parts packed to the
        # left: graphviz stretches a table to its cell (the legend beneath may be
        # wider than the band) and spreads the room between the parts; a table of a
        # fixed size it does not stretch. So the band is the same at every step.
        heights = [_LEGEND_ROW_PT, *row_pt, _LEGEND_ROW_PT]
        cells = "".join(
            f'<TR><TD><TABLE FIXEDSIZE="TRUE" WIDTH="{inner}" HEIGHT="{pt}" BORDER="0" '
            f'CELLSPACING="0" CELLPADDING="1"><TR>{row}</TR></TABLE></TD></TR>'
            for row, pt in zip([rule, *equations, key], heights, strict=True))
        # The band too is of a fixed size, its rows to the left of a wider legend.
        tall = sum(heights) + 4 * len(heights) + 2
        bands.append(f'<TABLE FIXEDSIZE="TRUE" ALIGN="LEFT" WIDTH="{width}" HEIGHT="{tall}" '
                     f'BORDER="0" CELLSPACING="2" CELLPADDING="1" BGCOLOR="{t.label_fill}">'
                     f"{cells}</TABLE>")
    return bands


def band_size(band: str) -> tuple[int, int]:
    """The width and height (points) of a caption band (step_bands) as a figure fitted
    to a frame draws it: its fixed size grown with the fitted type (dot.lettered)."""
    width, height = re.search(r'WIDTH="(\d+)" HEIGHT="(\d+)"', band).groups()
    return math.ceil(int(width) * FITTED_TYPE), math.ceil(int(height) * FITTED_TYPE)


def with_band(band: str, legend: str | None) -> str:
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
