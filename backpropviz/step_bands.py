"""A step picture's caption band: step k of n, the rule and the worked lines, as DOT."""

from __future__ import annotations

import math
import re
from html import escape

import networkx as nx

from .captions import Caption, step_captions, subscripted
from .metrics import text_width
from .style import FITTED_TYPE, LEGEND_PT, THEMES, VALUE_PT, Theme
from .typeset import equation_cells, equation_height, font

__all__ = ["BAND_CHARS", "band_size", "step_bands", "with_band"]


# A step picture's caption band: lines wrap at this many characters, and
# every step's band has as many lines, and the width, of the largest, so that
# all the steps keep one layout.
BAND_CHARS = 76
_BOLD = 1.1  # how much wider bold sets than regular, at most
_ROW_PT = round(1.7 * VALUE_PT)  # an equation row's height, subscripts and all
_LEGEND_ROW_PT = round(1.8 * LEGEND_PT)  # the rule's row and the key's
_KEY_TEXT = " this step  its op and edges,   ◀ blue: the gradients it sends back to the inputs"


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
    # Row i of every step's band as tall as the tallest row i of any step (an array
    # typeset takes as many lines as it has rows): the same size at every step.
    row_pt = [max([_ROW_PT] + [equation_height(step[i], VALUE_PT)
                               for step in lines if i < len(step)])
              for i in range(height)]
    last = len(captions) - 1
    # As wide as its widest row on any step (measured as graphviz sets it, a
    # little more for the bold), so that no step's band is wider than another's
    # and the key beneath the lines stays put through a build.
    widest = max([_BOLD * text_width(f"step {k} of {last}", LEGEND_PT)
                  + text_width("  " + subscripted(caption.rule), LEGEND_PT)
                  for k, caption in enumerate(captions)]
                 + [text_width(line, VALUE_PT) for step in lines for line in step]
                 + [text_width(_KEY_TEXT, LEGEND_PT) + 12])
    width = int(1.06 * widest + 12)  # (its lines are broken at BAND_CHARS)
    key = (f'<TD BORDER="1" COLOR="{t.highlight_line}" BGCOLOR="{t.highlight_fill}" '
           'STYLE="ROUNDED">'
           f'{font(" this step ", t.text, LEGEND_PT)}</TD>'
           f'<TD>{font(" its op and edges,   ", t.muted, LEGEND_PT)}</TD>'
           f'<TD>{font("◀ blue", t.grad, LEGEND_PT)}</TD>'
           f'<TD>{font(": the gradients it sends back to the inputs", t.muted, LEGEND_PT)}</TD>')
    inner = width - 6  # (the band's cell spacing and padding)
    bands = []
    for k, (caption, step) in enumerate(zip(captions, lines, strict=True)):
        rule = (f'<TD><B>{font(f"step {k} of {last}", t.text, LEGEND_PT)}</B></TD>'
                f'<TD>{font(escape("  " + subscripted(caption.rule)), t.muted, LEGEND_PT)}</TD>')
        equations = [equation_cells(line, t.text, VALUE_PT) for line in step]
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
