"""The clip's first and last frames: the title card (what is computed) and the recap.

Both are read from the IR alone: the title card says what the graph computes
(its root written as the captions write it, and its number), the recap lists
the gradients found, typeset, and the lessons this graph showed: a fork's
gradients add (or, in an engine that did not add them, that it should have),
a dead ReLU zeros its units' gradients and with them rows of the weights'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np
from manim import DOWN, LEFT, RIGHT, VGroup

from ..captions import step_captions
from ..formatting import counted_parameters, listed, number_text
from ..metrics import text_width
from ..names import partial_name, value_names
from ..steps import fork_edges, plain_constants
from ..style import Theme
from ..worked import not_the_chain_rules, wrong_seed
from .mobjects import TextStore
from .screen import CAPTION_WIDTH, TEXT_EM, result_table, results_text, wrapped_words

# A title card lists the parameters that get a gradient up to this many; more, it counts them.
FEW_NAMED = 4

__all__ = ["lessons", "recap_card", "title_card", "what_is_computed"]

# What a worked line says where the engine did not add a share (captions._edge_lines).
NOT_ADDED = (" (overwrote ", " in the engine, not the sum of ")

# The cards' type: a headline, and lines under it.
HEADLINE_EM, LINE_EM = 2.2 * TEXT_EM, 1.25 * TEXT_EM


def what_is_computed(G: nx.MultiDiGraph, precision: int) -> tuple[str, str]:
    """The root as its op computed it (``e = d · c``, its operands named as every view
    names values, written whole: the card has the frame's width, not a box's) and its
    number (``e = −3``)."""
    root = G.graph["roots"][0]
    names = value_names(G)
    made = list(G.predecessors(root))
    part = G.subgraph([root, *made, *(u for op in made for u in G.predecessors(op))]).copy()
    for node, attrs in part.nodes(data=True):
        if attrs.get("kind") == "value":
            attrs["label"] = None if node == root else names[node].text
    written = value_names(part, longest=1 << 16)[root].text
    name = names[root].text
    number = f"{name} = {number_text(G.nodes[root]['data'], precision)}"
    return (f"{name} = {written}" if written != name else name), number


def _wanted(G: nx.MultiDiGraph, names: dict) -> str:
    """What the backward pass gives a gradient: the parameters that get one (not a frozen
    one), those a module's operator holds among them (views.py), listed, or counted past
    FEW_NAMED; else "every input"."""
    drawn = [(names[node].text, np.shape(attrs["data"])) for node, attrs in G.nodes(data=True)
             if attrs.get("role") == "param" and attrs.get("grad") is not None]
    held = [(f"{attrs['symbol']}.{name}", np.shape(grad)) for _, attrs in G.nodes(data=True)
            for name, grad in zip(attrs.get("parameter_names", ()),
                                  attrs.get("parameter_grads", ()), strict=True)]
    parameters = [name for name, _ in drawn + held]
    if len(parameters) > FEW_NAMED:
        return f"its {counted_parameters([shape for _, shape in drawn + held])}"
    return listed(parameters) if parameters else "every input"


def title_card(G: nx.MultiDiGraph, store: TextStore, palette: Theme, precision: int,
               backward: bool, more: Sequence[str] = ()) -> tuple[VGroup, str]:
    """The title card, in screen units, and its words (its cue); ``more``: lines it says
    after its own (a training clip's passes)."""
    computed, number = what_is_computed(G, precision)
    names = value_names(G)
    wanted = _wanted(G, names)
    parameters = wanted != "every input"
    # (an engine whose backward is not the chain rule is not said to follow it)
    how = "by this engine's backward pass" if backward and not_the_chain_rules(G) \
        else "by the chain rule"
    if backward and G.graph.get("entered"):
        # (backward started beyond the drawing: a rolled loop's earlier repetition, a
        # value a later one was made from; what is drawn is not the loss)
        lines = [f"{number}: the backward pass started at a later value, beyond the "
                 f"drawing; its gradient enters here and goes back to {wanted}, {how}"]
    elif backward:
        # ("the loss L = 0.8", but "loss = 0.8", not "the loss loss = 0.8")
        named_so = "loss" in names[G.graph["roots"][0]].text.lower()
        lines = [f"{'the loss ' if parameters and not named_so else ''}{number}: its gradient "
                 f"with respect to {wanted}, {how}"]
    else:
        lines = [f"{number}, each value from its inputs"]
    lines.extend(more)
    earlier = G.graph.get("earlier_passes")
    if earlier:  # (a loop's passes, each on a graph of its own)
        lines.append(f"the script's last backward pass, after {earlier} "
                     f"other{'s' if earlier > 1 else ''}: its numbers")
    count = G.graph.get("loop_count")
    if count:  # a rolled loop (rolling.py): what its one block stands for
        lines.append(f"a loop repeated {count} times, drawn once (the dashed edge ⟲ ×{count}): "
                     f"its numbers are repetition {G.graph['loop_step'] + 1}'s")
    # The headline in rows of the caption's width (a module's expression, as
    # loss = cross_entropy(model.head(ReLU(…))), y), is wider than the frame), a row
    # with no room to break shrunk to it.
    card = VGroup(store.text(computed, HEADLINE_EM, palette.text))
    if card.width > CAPTION_WIDTH:
        card = VGroup(*(store.text(row, HEADLINE_EM, palette.text)
                        for row in wrapped_words(computed, HEADLINE_EM)))
    for row in card:
        if row.width > CAPTION_WIDTH:
            row.scale(CAPTION_WIDTH / row.width)
    for line in lines:
        card.add(*(store.text(row, LINE_EM, palette.muted)
                   for row in wrapped_words(line, LINE_EM)))
    card.arrange(DOWN, buff=0.35)
    return card, "\n".join([computed, *lines])


def lessons(G: nx.MultiDiGraph) -> list[str]:
    """What this graph showed, from its IR: always the chain rule; forks adding, where a
    value is used twice (and whether the engine added); a dead ReLU, where one is."""
    names = value_names(G)
    found = ["each gradient is the local derivative × the gradient from above"]
    forks: dict[Any, list] = {}
    forked = fork_edges(G, plain_constants(G, False))
    for edge in G.edges(keys=True):  # (in the graph's order: the same words every run)
        if edge in forked:
            forks.setdefault(edge[0], []).append(edge)
    if forks:
        used = ", ".join(names[u].text for u in forks)
        # A share the engine did not add where the rule says +=: its caption says so (it
        # overwrote the gradient, or left one that is not the sum; not a share that its
        # rule got wrong, which it added all the same).
        noted = {edge[0] for caption in step_captions(G) for edge, worked in caption.edges
                 if any(said in line for line in worked for said in NOT_ADDED)}
        wrong = [names[u].text for u in forks if u in noted]
        lesson = f"forks add: a value used more than once ({used}) gets the sum of its shares"
        if wrong:
            lesson += "; this engine did not add them"
        found.append(lesson)
    off = [names[node].text for node in not_the_chain_rules(G)
           if G.nodes[node]["role"] != "const"]
    seed = wrong_seed(G)
    if seed is not None:  # (what every other gradient then is off by)
        (root,) = G.graph["seeds"]
        partial = partial_name(names[root], names[root]).text
        found.append(f"this engine's backward started from {partial} = "
                     f"{number_text(seed)}, not 1, and the chain rule multiplies every "
                     f"gradient by it")
    elif off:
        # (every one the engine's wrong share reached, not only where it went wrong: the
        # recap's gradients are the engine's, and these are not the chain rule's)
        listed = _listed(off, 6)
        found.append(f"this engine's backward is not the chain rule: {listed} "
                     f"{'is' if len(off) == 1 else 'are'} not what the chain rule gives")
    dead = [np.asarray(attrs["dead"], dtype=bool) for _, attrs in G.nodes(data=True)
            if attrs.get("kind") == "op" and np.any(np.asarray(attrs.get("dead", False)))]
    # A unit dead for the whole batch (examples × units) zeros the weights' row that
    # feeds it; on a batch whose examples die at different units, or on a feature map,
    # no row is said to be zeroed.
    if any(mask.ndim <= 1 or (mask.ndim == 2 and mask.all(axis=0).any()) for mask in dead):
        # ("through it": the book's W₁ still gets its penalty's gradient in that row)
        found.append("a dead ReLU zeros a row: a unit whose input was ≤ 0 passes no "
                     "gradient back, so the weights that feed it get none through it")
    elif dead:
        found.append("a ReLU passes no gradient back where its input was ≤ 0: a unit "
                     "dead for one example still learns from the others")
    return found


def _listed(names: list[str], most: int) -> str:
    """``the gradient of h``, ``the gradients of x, w and b``, ``... and 3 more``."""
    if len(names) == 1:
        return f"the gradient of {names[0]}"
    shown = names if len(names) <= most else [*names[:most - 1], f"{len(names) - most + 1} more"]
    return f"the gradients of {listed(shown)}"


def recap_card(G: nx.MultiDiGraph, store: TextStore, palette: Theme,
               results: list[tuple[Any, str, str]], precision: int,
               dead_values: dict[Any, Any]) -> tuple[VGroup, str, VGroup | None]:
    """The recap, in screen units: "Recap", the gradients found typeset, the lessons;
    its words (its cue); and its results alone (None if there are none). It fills the
    frame: set in type up to RECAP_GROWTH times the cards' (its lessons wrapped at
    that size), until it is as wide as a caption or RECAP_HEIGHT tall."""
    card, table = _recap(G, store, palette, results, precision, dead_values, 1.0)
    # (its lessons are wrapped again at the larger size: its other parts bound it)
    most = min(RECAP_GROWTH, RECAP_HEIGHT / card.height,
               CAPTION_WIDTH / max(part.width for part in card[:-1]))
    # (in tenths, the largest at which no lesson ends in a row of a word or two)
    grown = max([1.0] + [tenths / 10 for tenths in range(11, int(most * 10 + 1e-9) + 1)
                         if _wrapped_well(G, tenths / 10)])
    if grown > 1.0:
        card, table = _recap(G, store, palette, results, precision, dead_values, grown)
        # (wrapped at the larger size its lessons may take more rows: no smaller than
        # the cards' type, though)
        card.scale(max(1.0 / grown, min(1.0, RECAP_HEIGHT / card.height,
                                         CAPTION_WIDTH / card.width)))
    # A recap still too big for the frame (a GRU's four weights, six rows each) is set
    # smaller than the cards' type rather than cut at the frame's edges.
    card.scale(min(1.0, RECAP_HEIGHT / card.height, CAPTION_WIDTH / card.width))
    words = ["Recap", *([results_text(G, results, precision)] if results else []),
             *lessons(G)]
    return card, "\n".join(words), table


# How much larger than the cards' type the recap may be set, and how tall (of the
# frame's 8 units) it may be.
RECAP_GROWTH, RECAP_HEIGHT = 1.6, 7.0


def _lesson_rows(lesson: str, em: float) -> list[str]:
    """A lesson cut into rows at ``em``, as few as fit a caption's width, of about
    the same width."""
    width = CAPTION_WIDTH - 0.5
    rows = wrapped_words(lesson, em, width)
    if len(rows) > 1:
        even = text_width(lesson, em) / len(rows)
        for factor in (1.05, 1.1, 1.15, 1.2, 1.3, 1.4):
            tried = wrapped_words(lesson, em, min(width, even * factor))
            if len(tried) == len(rows):
                return tried
    return rows


def _wrapped_well(G: nx.MultiDiGraph, grown: float) -> bool:
    """Whether every lesson of the recap, in type ``grown`` times the cards', ends in a
    row at least half as wide as its first."""
    em = LINE_EM * grown
    for lesson in lessons(G):
        rows = _lesson_rows(lesson, em)
        if text_width(rows[-1], em) < 0.5 * text_width(rows[0], em):
            return False
    return True


def _recap(G: nx.MultiDiGraph, store: TextStore, palette: Theme,
           results: list[tuple[Any, str, str]], precision: int, dead_values: dict[Any, Any],
           grown: float) -> tuple[VGroup, VGroup | None]:
    """The recap card in type ``grown`` times the cards', and its results."""
    line_em = LINE_EM * grown
    table = result_table(store, palette, G, results, precision, dead_values)
    card = VGroup(store.text("Recap", HEADLINE_EM * 0.8 * grown, palette.text))
    if table is not None:
        card.add(table.scale(min(1.3 * grown, CAPTION_WIDTH / table.width)))
    rows, indented = VGroup(), []
    bullet = store.text("•", line_em, palette.muted)
    for lesson in lessons(G):
        for number, row in enumerate(_lesson_rows(lesson, line_em)):
            text = store.text(row, line_em, palette.muted)
            if number == 0:
                text = VGroup(bullet.copy(), text).arrange(RIGHT, buff=0.25 * grown)
            else:
                indented.append(text)
            rows.add(text)
    rows.arrange(DOWN, buff=0.16 * grown, aligned_edge=LEFT)
    for text in indented:  # under the words of the line above, not its bullet
        text.shift((bullet.width + 0.25 * grown) * RIGHT)
    card.add(rows)
    card.arrange(DOWN, buff=0.45 * grown)
    return card, table
