"""How pictures look: themes, fonts, point sizes and pen widths, for draw, the page and the video.

Sizes are graphviz points; the video converts them with its scale
(``animate.mobjects.pen_width``), so a box, a number or a line has the same
proportions in the SVG, on the page and in the clip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

__all__ = [
    "ARROW_SIZE",
    "BOOK",
    "CURRENT_EDGE_PEN",
    "CURRENT_OP_PEN",
    "DEAD_PEN",
    "EDGE_PEN",
    "EXPRESSION_PT",
    "FITTED_TYPE",
    "FONT",
    "LABEL_PT",
    "LEGEND_PT",
    "LONG_SYMBOL_PT",
    "MARK_PT",
    "MOST_DIGITS",
    "NAME_FONT",
    "NAME_PT",
    "NODE_PEN",
    "RANKDIRS",
    "RESULT_EDGE_PEN",
    "RULE_PEN",
    "SPEEDS",
    "THEMES",
    "VALUE_PT",
    "Theme",
    "fitted_pt",
    "symbol_pt",
]

# Graphviz's four directions, and the book's layout: bottom to top, each rank
# further right, so that the inputs are at the lower left and the output at
# the upper right.
BOOK = "book"
RANKDIRS = ("LR", "RL", "TB", "BT", BOOK)

# The most significant digits a number is drawn with: a float64 is told exactly by 17.
MOST_DIGITS = 17
# A clip's slowest and fastest speed: beyond them manim has a beat of no frame to draw,
# or a clock past its calendar.
SPEEDS = (0.01, 100.0)

# Helvetica resolves to a metric-compatible face everywhere (Nimbus Sans on
# Linux, Arial on Windows), so the boxes graphviz sizes here fit the text in
# any SVG viewer. Names are set in italic serif, like the book's symbols.
FONT = "Helvetica,Arial,sans-serif"
NAME_FONT = "Times,serif"

# Point sizes: numbers in value boxes, names above them, contributions on
# edges, the legend, the "saved for backward" dot.
VALUE_PT, NAME_PT, LABEL_PT, LEGEND_PT, MARK_PT = 14.0, 17.0, 12.0, 12.0, 11.0
# The expression heading an unnamed value (o − y): smaller than a name.
EXPRESSION_PT = 13.0
# An op's symbol: one or two characters large, longer ones ("ReLU") smaller.
SHORT_SYMBOL_PT, LONG_SYMBOL_PT = 16.0, 13.0
# In a figure fitted to a frame every text is this much larger, the boxes'
# padding and the space between them not: what the back row reads is the text.
FITTED_TYPE = 1.35


def fitted_pt(pt: float) -> int:
    """A text's size in a fitted figure: FITTED_TYPE times ``pt``, rounded up to whole
    points (graphviz sets an HTML label's text in whole points)."""
    return math.ceil(pt * FITTED_TYPE - 1e-9)

# Pen widths (points): outlines of boxes and circles, edges, the rule between
# a value and its gradient, a ReLU with dead units, the current op of a
# backward step, its operand edges and its result edge.
NODE_PEN, EDGE_PEN, RULE_PEN, DEAD_PEN = 1.4, 1.3, 1.0, 2.0
CURRENT_OP_PEN, CURRENT_EDGE_PEN, RESULT_EDGE_PEN = 3.0, 2.6, 2.0
ARROW_SIZE = 0.7  # graphviz's arrowsize


def symbol_pt(symbol: str) -> float:
    """The point size of an op's symbol in its circle."""
    return SHORT_SYMBOL_PT if len(symbol) <= 2 else LONG_SYMBOL_PT


@dataclass(frozen=True)
class Theme:
    """The colours of a drawing. Every text colour meets 4.5:1 on the fill under it.

    ``background`` is "transparent" or a colour. ``label_fill`` is the colour
    free-standing text (badges, the legend) is made for: drawn under it on a
    coloured background, and the slide's own colour, assumed that, when the
    background is transparent.
    """

    name: str
    background: str
    label_fill: str  # under edge labels and the legend
    node_fill: str
    node_line: str
    param_fill: str  # D2L fills parameters light blue
    op_fill: str
    op_line: str
    edge: str
    text: str  # forward values, names, op symbols
    grad: str  # gradients, everywhere
    muted: str  # secondary text: the legend, bracket rules
    saved: str  # the "stored for backward" marker
    dead_text: str  # a zero gradient caused by a dead ReLU
    dead_fill: str
    dead_line: str  # outline of a ReLU with dead units
    highlight_line: str  # the op of the current backward step and its edges
    highlight_fill: str  # under the op and the gradients the step changed

    @property
    def transparent(self) -> bool:
        """Whether the theme draws on no background, for a slide's own colour."""
        return self.background == "transparent"

    @property
    def text_fill(self) -> str | None:
        """What is filled behind free-standing text: nothing on a transparent
        background (the slide's colour shows), else ``label_fill``."""
        return None if self.transparent else self.label_fill

    @property
    def backdrop(self) -> str:
        """The colour under the drawing: its background, or on no background the
        colour of the slide it is made for (``label_fill``)."""
        return self.label_fill if self.transparent else self.background


THEMES: dict[str, Theme] = {
    "light": Theme(
        name="light", background="#ffffff", label_fill="#ffffff",
        node_fill="#ffffff", node_line="#3d4a5c", param_fill="#d7e8f7",
        op_fill="#f4f5f7", op_line="#3d4a5c", edge="#5b6573",
        text="#000000", grad="#1347b8", muted="#4f5966", saved="#8a4b00",
        dead_text="#a3121f", dead_fill="#fde4e6", dead_line="#c62833",
        highlight_line="#d9730d", highlight_fill="#fff1d6",
    ),
    "dark": Theme(
        name="dark", background="#16191f", label_fill="#16191f",
        node_fill="#232831", node_line="#8d99ab", param_fill="#1d3a5c",
        op_fill="#2b313c", op_line="#8d99ab", edge="#8d99ab",
        text="#f2f4f7", grad="#8cc4ff", muted="#b4bdca", saved="#ffc37a",
        dead_text="#ffb3b8", dead_fill="#4d1f25", dead_line="#ff6b75",
        highlight_line="#ffa94d", highlight_fill="#4a3517",
    ),
}
# The light and dark themes on no background, for slides with their own colour
# (light slides, dark slides): nothing is filled behind the legend and the
# contributions; their colours are the light (dark) theme's, made for its background.
THEMES["transparent"] = replace(THEMES["light"], name="transparent", background="transparent")
THEMES["transparent-dark"] = replace(THEMES["dark"], name="transparent-dark",
                                     background="transparent")
