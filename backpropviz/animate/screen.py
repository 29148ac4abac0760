"""The words around the graph: the title and colour key, the caption, the meter, the results."""

from __future__ import annotations

from typing import Any

import networkx as nx
from manim import DOWN, LEFT, RIGHT, Rectangle, Square, VGroup, VMobject

from ..captions import Caption, differentiated, number_text, partial_name, value_names
from ..formatting import MAX_ITEMS, byte_size, format_array
from ..style import Theme
from .mobjects import Table, TextStore

__all__ = ["caption_block", "meter_block", "note_line", "parameter_results", "result_table",
           "results_text", "title_block"]

# Where the words go (screen units; the frame is 14.2 x 8): a title line on
# top, a caption of up to CAPTION_HEIGHT at the bottom, CAPTION_WIDTH wide.
# Their ems: the title's, the caption's rule, its worked equations, a note
# and the overview's names of parameters.
TITLE_Y, RULE_Y, CAPTION_Y = 3.55, -2.65, -3.3
TITLE_EM, RULE_EM, WORKED_EM, CAPTION_EM = 0.3, 0.3, 0.3, 0.42
CAPTION_WIDTH, CAPTION_HEIGHT = 13.4, 1.55
# The final overview's results: their numbers set at RESULT_EM, at most
# RESULTS_HEIGHT of the frame's 8 units, RESULT_GAP under the graph.
RESULT_EM, RESULTS_HEIGHT, RESULT_GAP = 0.32, 3.6, 0.45
# The memory meter, top right: its bar's width and height.
METER_WIDTH, METER_HEIGHT = 2.6, 0.13


def title_block(store: TextStore, palette: Theme, text: str) -> VGroup:
    """The phase title, muted, over the key to the colours: numbers in the theme's
    text colour are values, in blue gradients."""
    words = store.text(text, TITLE_EM, palette.muted)
    key = VGroup(Square(0.16, fill_color=palette.text, fill_opacity=1, stroke_width=0),
                 store.text("value", TITLE_EM * 0.85, palette.text),
                 Square(0.16, fill_color=palette.grad, fill_opacity=1, stroke_width=0),
                 store.text("gradient", TITLE_EM * 0.85, palette.grad))
    key.arrange(RIGHT, buff=0.1)
    key[2].shift(0.25 * RIGHT)
    key[3].shift(0.25 * RIGHT)
    return VGroup(words, key).arrange(DOWN, buff=0.1, aligned_edge=LEFT)


def meter_block(store: TextStore, palette: Theme, held: int, peak: int) -> VGroup:
    """"kept for backward: 16 bytes" over a bar filled to ``held`` of ``peak`` bytes."""
    label = store.text(f"kept for backward: {byte_size(held)}", TITLE_EM, palette.muted)
    track = Rectangle(width=METER_WIDTH, height=METER_HEIGHT, stroke_color=palette.node_line,
                      stroke_width=1.5, fill_opacity=0)
    share = held / peak
    fill = Rectangle(width=max(share, 1e-3) * METER_WIDTH, height=METER_HEIGHT,
                     stroke_width=0, fill_color=palette.saved, fill_opacity=1.0 if share else 0.0)
    fill.align_to(track, LEFT)
    return VGroup(label, VGroup(track, fill)).arrange(DOWN, buff=0.1, aligned_edge=RIGHT)


def caption_block(store: TextStore, palette: Theme, caption: Caption) -> VGroup:
    """A step's rule, then its equations with the engine's numbers, one a line (as the
    page and the step pictures write them), within the caption's room."""
    rule = store.text(caption.rule, RULE_EM, palette.muted)
    lines = [store.text(line, WORKED_EM, palette.text) for line in caption.worked]
    block = VGroup(rule, *lines).arrange(DOWN, buff=0.12)
    return block.scale(min(1.0, CAPTION_WIDTH / block.width, CAPTION_HEIGHT / block.height))


def note_line(store: TextStore, palette: Theme, text: str) -> VMobject:
    """A plain sentence for the caption line, no wider than the caption."""
    note = store.text(text, CAPTION_EM * 0.8, palette.text)
    if note.width > CAPTION_WIDTH:
        note.scale(CAPTION_WIDTH / note.width)
    return note


def parameter_results(G: nx.MultiDiGraph) -> list[tuple[Any, str, str]]:
    """The parameters whose gradients the final overview sums up, each with its
    "∂L/∂W1 =" in TeX and in Unicode (L: the differentiated root, named as the
    captions name it)."""
    names = value_names(G)
    top = differentiated(G, names)
    results = []
    for node, attrs in G.nodes(data=True):
        if attrs["kind"] == "value" and attrs["role"] == "param" and attrs["grad"] is not None:
            name = partial_name(top, names[node])
            results.append((node, f"{name.tex} =", f"{name.text} ="))
    return results


def results_text(G: nx.MultiDiGraph, results: list[tuple[Any, str, str]], precision: int) -> str:
    """The overview's results in words, as its cue: "∂L/∂W1 = [...]", one a line."""
    return "\n".join(f"{text} {number_text(G.nodes[node]['grad'], precision)}"
                     for node, _, text in results)


def result_table(store: TextStore, palette: Theme, G: nx.MultiDiGraph,
                 results: list[tuple[Any, str, str]], precision: int,
                 dead_values: dict[Any, Any]) -> VGroup | None:
    """The parameters' final gradients in lines, "∂L/∂W1 = [...]" each, in screen
    units; None if the graph has no parameters."""
    if not results:
        return None
    parts = []
    for node, tex, text in results:
        name = store.math(tex, text, CAPTION_EM, palette.text)
        grad = Table(format_array(G.nodes[node]["grad"], precision, MAX_ITEMS), store,
                     RESULT_EM, palette.grad, bracketed=len(G.nodes[node]["shape"]) > 0,
                     dead=dead_values.get(node), dead_color=palette.dead_text,
                     dead_fill=palette.dead_fill)
        parts.append(VGroup(name, grad).arrange(RIGHT, buff=0.3 * RESULT_EM))
    # As many to a line as fit the caption's width at their size (digits of
    # 12 px and more at 480p); only a table taller than RESULTS_HEIGHT shrinks.
    gap, lines, line, width = 2.5 * RESULT_EM, [], [], 0.0
    for part in parts:
        if line and width + gap + part.width > CAPTION_WIDTH:
            lines.append(line)
            line, width = [], 0.0
        width += (gap if line else 0.0) + part.width
        line.append(part)
    lines.append(line)
    table = VGroup(*(VGroup(*line).arrange(RIGHT, buff=gap) for line in lines))
    table.arrange(DOWN, buff=0.3)
    return table.scale(min(1.0, CAPTION_WIDTH / table.width, RESULTS_HEIGHT / table.height))
