"""The words around the graph: the title and colour key, the caption, the meter, the results."""

from __future__ import annotations

from typing import Any

import networkx as nx
from manim import DOWN, LEFT, RIGHT, Rectangle, Square, VGroup, VMobject

from .. import ops
from ..formatting import MAX_ITEMS, byte_size, format_array, number_text
from ..metrics import text_width
from ..names import differentiated, parenthesised, partial_name, value_names
from ..style import Theme
from ..worked import not_the_chain_rules
from .mobjects import Table, TextStore

__all__ = ["CAPTION_WIDTH", "PAGE_ROWS", "ROW_PITCH", "TEXT_EM", "caption_top", "graph_room",
           "meter_block", "note_line", "parameter_results", "result_table", "results_text",
           "title_block", "wrapped", "wrapped_words"]

# Where the words go (screen units; the frame is 14.2 x 8): a title line on top,
# the caption in a band at the bottom, rows of it ROW_PITCH apart, the graph in
# the room between them (graph_room). No text is set under TEXT_EM: 0.3 units is
# 40 px at 1080p (17.8 px at 480p); the title and caption are set at it.
TEXT_EM = 0.3
ROW_PITCH = 1.4 * TEXT_EM
SIDE_MARGIN = 0.3
TITLE_Y = 3.68
TITLE_BOTTOM = 3.36  # the title band's lower edge (with the meter, a row lower)
CAPTION_BOTTOM = -3.9  # the caption band's lower edge
BAND_GAP = 0.12  # between a band and the graph's room
CAPTION_WIDTH = 14.2 - 2 * SIDE_MARGIN
# Kept for the scenes that place plain lines in the caption band (a training run's).
RULE_Y, CAPTION_Y = -2.65, -3.3
TITLE_EM, RULE_EM, WORKED_EM, CAPTION_EM = TEXT_EM, TEXT_EM, TEXT_EM, 1.2 * TEXT_EM
CAPTION_HEIGHT = 4 * ROW_PITCH
# A step's caption shows at most PAGE_ROWS rows at a time (its rule and a page of its
# shares' lines, story.caption_pages), so that the graph keeps the larger part of the
# frame: 6 rows are 2.5 of its 8 units.
PAGE_ROWS = 6
# The closing recap's results: their numbers set at RESULT_EM, at most RESULTS_HEIGHT
# of the frame's 8 units, RESULT_GAP under the graph.
RESULT_EM, RESULTS_HEIGHT, RESULT_GAP = 1.1 * TEXT_EM, 4.2, 0.45
# The memory meter, on a row of its own under the title: its bar's width and height.
METER_WIDTH, METER_HEIGHT = 2.6, 0.13


def caption_top(rows: int) -> float:
    """The top of a caption band that holds ``rows`` rows."""
    return CAPTION_BOTTOM + rows * ROW_PITCH


def graph_room(rows: int, meter: bool = False) -> tuple[float, float, float, float]:
    """The graph's room on screen between the title band and a caption band of ``rows``
    rows: (left, right, bottom, top)."""
    half = 14.2 / 2 - SIDE_MARGIN
    top = TITLE_BOTTOM - (ROW_PITCH if meter else 0.0) - BAND_GAP
    return (-half, half, caption_top(rows) + BAND_GAP, top)


def wrapped(pieces: list[str], breaks: list[bool], em: float,
            width: float = CAPTION_WIDTH) -> list[list[int]]:
    """``pieces`` of a line (joined by spaces) cut into rows no wider than ``width`` at
    ``em`` where they may be (``breaks``: before that piece), as the indices of each
    row's pieces; a piece wider than a row has a row of its own."""
    rows: list[list[int]] = [[]]
    for index in range(len(pieces)):
        row = rows[-1]
        if row and breaks[index]:
            # The row with what follows up to the next place it may break (an "=" and
            # the matrix after it): the pieces in between go on the same row.
            end = next((j for j in range(index + 1, len(pieces)) if breaks[j]), len(pieces))
            text = " ".join([*(pieces[i] for i in row), *pieces[index:end]])
            if text_width(text, em) > width:
                rows.append([])
        rows[-1].append(index)
    return rows


def wrapped_words(text: str, em: float, width: float = CAPTION_WIDTH, *,
                  at_equals: bool = False) -> list[str]:
    """A sentence cut into rows at spaces, each no wider than ``width`` at ``em``; never
    inside brackets (a matrix written [1, −1; 0, 1] stays on one row). ``at_equals``:
    an equation, cut before its "=" signs if its rows fit so."""
    words = _bracketed_words(text)
    if at_equals:
        rows = wrapped(words, [word == "=" for word in words], em, width)
        if all(text_width(" ".join(words[i] for i in row), em) <= width for row in rows):
            return [" ".join(words[i] for i in row) for row in rows if row]
    rows = wrapped(words, [True] * len(words), em, width)
    if len(rows) > 1:  # rows of about the same length, as few as before
        even = text_width(text, em) / len(rows) * 1.1
        balanced = wrapped(words, [True] * len(words), em, min(width, even))
        rows = balanced if len(balanced) == len(rows) else rows
    return [" ".join(words[i] for i in row) for row in rows if row]


def _bracketed_words(text: str) -> list[str]:
    """The words of ``text``, those inside brackets joined with their neighbours."""
    words: list[str] = []
    depth = 0
    for word in text.split():
        if depth > 0:
            words[-1] += " " + word
        else:
            words.append(word)
        depth = max(0, depth + word.count("[") - word.count("]"))
    return words


def title_block(store: TextStore, palette: Theme, text: str, key: bool = True) -> VGroup:
    """The phase title, muted, and on its line (with ``key``) the key to the colours:
    numbers in the theme's text colour are values, in blue gradients."""
    words = store.text(text, TITLE_EM, palette.muted)
    if not key:  # (a picture of values only: a training run's paths)
        return VGroup(words)
    key = VGroup(Square(0.2, fill_color=palette.text, fill_opacity=1, stroke_width=0),
                 store.text("value", TITLE_EM, palette.text),
                 Square(0.2, fill_color=palette.grad, fill_opacity=1, stroke_width=0),
                 store.text("gradient", TITLE_EM, palette.grad))
    key.arrange(RIGHT, buff=0.12)
    key[2].shift(0.3 * RIGHT)
    key[3].shift(0.3 * RIGHT)
    block = VGroup(words, key).arrange(RIGHT, buff=0.8)
    if block.width > CAPTION_WIDTH:
        key.next_to(words, DOWN, buff=0.1, aligned_edge=LEFT)
    return block


def meter_block(store: TextStore, palette: Theme, held: int, peak: int) -> VGroup:
    """"kept for backward: 16 bytes" over a bar filled to ``held`` of ``peak`` bytes."""
    label = store.text(f"kept for backward: {byte_size(held)}", TITLE_EM, palette.muted)
    track = Rectangle(width=METER_WIDTH, height=METER_HEIGHT, stroke_color=palette.node_line,
                      stroke_width=1.5, fill_opacity=0)
    share = held / peak
    fill = Rectangle(width=max(share, 1e-3) * METER_WIDTH, height=METER_HEIGHT,
                     stroke_width=0, fill_color=palette.saved, fill_opacity=1.0 if share else 0.0)
    fill.align_to(track, LEFT)
    return VGroup(label, VGroup(track, fill)).arrange(RIGHT, buff=0.2)


def note_line(store: TextStore, palette: Theme, text: str, *,
              at_equals: bool = False) -> VMobject:
    """A plain sentence for the caption band, in rows no wider than the caption
    (``at_equals``: an equation, cut before its "=" where it can be)."""
    rows = [store.text(row, CAPTION_EM, palette.text)
            for row in wrapped_words(text, CAPTION_EM, at_equals=at_equals)]
    return VGroup(*rows).arrange(DOWN, buff=ROW_PITCH - CAPTION_EM)


def parameter_results(G: nx.MultiDiGraph) -> list[tuple[Any, str, str]]:
    """The parameters whose gradients the recap sums up (in a graph without any, the
    inputs: the named ones, if any is), each with its "∂L/∂W1 =" in TeX and in Unicode
    (L: the differentiated root, named as the captions name it), or "W1.grad =" where
    the engine's gradient is not the chain rule's."""
    names = value_names(G)
    top = differentiated(G, names)
    found = [node for node, attrs in G.nodes(data=True) if attrs["kind"] == "value"
             and attrs["role"] == "param" and attrs["grad"] is not None]
    if not found:  # a graph without parameters: its inputs' gradients, of those named
        # if some are (a hand-written engine's w, u, b, not the numbers it wrapped: 0.3)
        inputs = [node for node, attrs in G.nodes(data=True) if attrs["kind"] == "value"
                  and attrs["role"] == "input" and attrs["grad"] is not None]
        found = [node for node in inputs if G.nodes[node].get("label")] or inputs
    # A gradient this engine got other than by the chain rule is its own .grad, not
    # ∂L/∂w (the recap lists them: cards.lessons).
    off = set(not_the_chain_rules(G))
    results = []
    for node in found:
        if node in off:
            name = names[node]
            results.append((node, rf"{parenthesised(name, ops.POSTFIX).tex}.\mathrm{{grad}} =",
                            f"{parenthesised(name, ops.POSTFIX).text}.grad ="))
            continue
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
