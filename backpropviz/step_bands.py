"""A step picture's caption band: step k of n, the rule and the worked lines, as DOT."""

from __future__ import annotations

from html import escape

import networkx as nx

from .captions import Caption, step_captions
from .dot import font
from .style import LEGEND_PT, THEMES, VALUE_PT, Theme

__all__ = ["BAND_CHARS", "step_bands"]


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
           f'{font(" this step ", t.text, LEGEND_PT)}</TD>'
           f'<TD>{font(" its op and edges,   ", t.muted, LEGEND_PT)}</TD>'
           f'<TD>{font("◀ blue", t.grad, LEGEND_PT)}</TD>'
           f'<TD>{font(": the gradients it sends back to the inputs", t.muted, LEGEND_PT)}</TD>'
           "</TR></TABLE>")
    bands = []
    last = len(captions) - 1
    for k, (caption, step) in enumerate(zip(captions, lines, strict=True)):
        rows = [f'<B>{font(f"step {k} of {last}", t.text, LEGEND_PT)}</B>'
                + font(escape("  " + caption.rule), t.muted, LEGEND_PT)]
        rows += [font(escape(line), t.text, VALUE_PT) for line in step]
        rows += [font("&#160;", t.text, VALUE_PT)] * (height - len(step))
        rows.append(key)
        cells = "".join(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT">{row}</TD></TR>' for row in rows)
        bands.append(f'<TABLE BORDER="0" CELLSPACING="2" CELLPADDING="1" WIDTH="{width}" '
                     f'BGCOLOR="{t.label_fill}">{cells}</TABLE>')
    return bands
