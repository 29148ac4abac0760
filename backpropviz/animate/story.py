"""A backward step told as it happens: the caption's terms, and the numbers moving along the edges.

At each share of a step, the upstream gradient (a copy of the result's blue
number) travels back along the result's edge and on along the operand's; the
local derivative's factors (copies of the forward values it reads, in the
colour of the values kept for backward) fly in to meet it near the operand;
they become the product the IR recorded on that edge, which lands in the
operand's gradient slot. At a fork the slot shows the gradient so far and the
share arriving (``6 + 6``) before it becomes the recorded sum (``12``); at a
dead ReLU the gradient stops at a bar. The caption's terms appear as the
motion reaches them, each coloured like the slot its number comes from:
gradients blue, forward values the colour of what backward keeps, operators
muted. Every number is one the IR recorded; the captions' own text is split,
never rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from manim import (
    RIGHT,
    RoundedRectangle,
    Succession,
    VGroup,
    VMobject,
    rate_functions,
)

from ..captions import ENGINE_NOTES, Caption, step_form
from ..formatting import MAX_ITEMS, format_array, number_text
from ..forward_lines import ForwardLine
from ..metrics import text_width
from ..names import differentiated, partial_name, subscripted, value_names
from ..steps import start_grads
from ..style import Theme
from .fades import Becomes, FadeIn, FadeOut, Moved
from .mobjects import Z_FLYING, Z_MARK, Table, TextStore
from .motion import Along, flash, stop_bar
from .pacing import Pace, durations, factor_sources, share_pace
from .screen import CAPTION_WIDTH, ROW_PITCH, RULE_EM, WORKED_EM, wrapped, wrapped_words

__all__ = ["PHASES", "StepCaption", "Term", "add_share", "caption_lines",
           "caption_pages", "caption_rows", "closing_story", "finish_story",
           "forward_terms", "gate_stop",
           "line_rows_of", "line_terms", "seed_story", "share_story", "spaced", "step_caption",
           "sum_terms"]

# When a term appears: as the upstream gradient sets off (the equation itself), as it
# meets the local derivative (the numbers put in), as the product lands (the share),
# as a fork's share arrives beside the gradient so far, and as their sum replaces them.
PHASES = ("travel", "meet", "land", "share", "total")
_OPERATORS = {"·", "⊙", "×", "/", "+", "−", "=", "≈", "+=", "÷", "@"}


@dataclass(frozen=True)
class Term:
    """A piece of a worked line: its ``text``, what it is (``role``: "gradient", the one
    computed; "upstream", the one arriving; "local", a forward value the local
    derivative reads; "operator"; "note", on what the engine did) and when it appears
    (``phase``, one of PHASES)."""

    text: str
    role: str
    phase: str


def _pieces(segment: str, upstream: Sequence[str], g_first: bool) -> list[tuple[str, str]]:
    """A segment of a line split into (text, role): the upstream gradient's name or
    number (the first or the last place it occurs, as the rule's template puts it
    first or not), operators, and the local derivative's factors between them."""
    found = None
    for text in sorted(upstream, key=len, reverse=True):
        spots = [i for i in range(len(segment)) if segment.startswith(text, i)
                 and (i == 0 or segment[i - 1] in " (")
                 and (i + len(text) == len(segment) or segment[i + len(text)] in " )ᵀ")]
        if spots:
            start = spots[0] if g_first else spots[-1]
            found = (start, start + len(text))
            break
    if found is not None:
        start, end = found
        return [*_pieces(segment[:start], (), g_first), (segment[start:end], "upstream"),
                *_pieces(segment[end:], (), g_first)]
    pieces: list[tuple[str, str]] = []
    for token in segment.split():
        role = "operator" if token in _OPERATORS else "local"
        if pieces and pieces[-1][1] == role:
            pieces[-1] = (pieces[-1][0] + " " + token, role)
        else:
            pieces.append((token, role))
    return pieces


def _note(line: str) -> tuple[str, str]:
    """A line and the note the caption adds on what the engine did, apart."""
    for opening in ENGINE_NOTES:
        if opening in line:
            at = line.index(opening)
            return line[:at], line[at + 1:]
    return line, ""


_EQUALS = re.compile(r" ([=≈]) ")


def line_terms(line: str, upstream: Sequence[str], g_first: bool,
               result: str | None) -> list[Term]:
    """The terms of a share's worked line (``∂e/∂d = c · ∂e/∂e = (−3) · 1 = −3``): the
    gradient computed and the equation set off with the upstream gradient, the numbers
    when it meets the local derivative, the ``result`` (the share as recorded) when it
    lands. ``upstream`` are the upstream gradient's name and number as written."""
    main, note = _note(line)
    sign = " += " if " += " in main else " = "
    left, _, rest = main.partition(sign)
    # (split at each = and at the ≈ before a result rounded as written, each kept)
    segments, signs = _EQUALS.split(rest)[::2], ["", *_EQUALS.split(rest)[1::2]]
    terms = [Term(left, "gradient", "travel"), Term(sign.strip(), "operator", "travel")]
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1 and i > 0
        phase = "travel" if i == 0 else "land" if last and segment == result else "meet"
        if i:
            terms.append(Term(signs[i], "operator", phase))
        if phase == "land":
            terms.append(Term(segment, "gradient", phase))
        else:
            terms.extend(Term(text, role, phase)
                         for text, role in _pieces(segment, upstream, g_first))
    if note:
        terms.append(Term(note, "note", "land"))
    return terms


def sum_terms(line: str) -> list[Term]:
    """The terms of a fork's sum line (``∂c/∂b = 6 + 6 = 12``): all but the sum as the
    share arrives beside the gradient so far, the sum as it replaces them. A rolled
    loop's closing line adds several shares (``= a + b + c ≈ s``), each a term."""
    left, sign, rest = line.partition(" = ")
    *parts, equals, total = _EQUALS.split(rest) if sign else ["", "", ""]
    terms_ = "".join(parts)
    if not sign or not terms_ or " + " not in terms_:
        return [Term(line, "note", "total")]  # what an engine did instead of adding
    before, *shares = terms_.split(" + ")
    added = [term for share in shares
             for term in (Term("+", "operator", "share"), Term(share, "upstream", "share"))]
    return [Term(left, "gradient", "share"), Term("=", "operator", "share"),
            Term(before, "gradient", "share"), *added, Term(equals, "operator", "total"),
            Term(total, "gradient", "total")]


class StepCaption(VGroup):
    """A step's caption: its rule line (if any) over its worked lines, whose terms are
    hidden until ``reveal`` shows them. ``terms[edge]`` are the (Term, glyphs) of the
    lines of that operand edge, in order; ``shown`` the texts revealed so far.

    A caption taller than ``most`` rows is shown a page at a time: the rule stays, and
    under it the lines of as many whole shares as fit (caption_pages); ``turn`` clears
    the page shown for the next, in the same rows."""

    def __init__(self, store: TextStore, palette: Theme, rule: str,
                 lines: Sequence[tuple[Any, Sequence[Term]]], most: int | None = None) -> None:
        super().__init__()
        colours = {"gradient": palette.grad, "upstream": palette.grad, "local": palette.saved,
                   "operator": palette.muted, "note": palette.dead_text,
                   "value": palette.text}
        self.rule_text = subscripted(rule)
        # The rule in rows of the caption's width; each worked line too, cut before an
        # "=" or a note where it is wider (terms are never cut).
        self.rule = VGroup(*(store.text(row, RULE_EM, palette.muted)
                             for row in wrapped_words(rule, RULE_EM))) if rule else None
        self.lines: list[VGroup] = []
        self.line_texts: list[str] = []
        self.line_terms: list[list[tuple[Term, VGroup]]] = []
        self.terms: dict[Any, list[tuple[Term, VGroup]]] = {}
        rows: list[VMobject] = list(self.rule or [])
        line_rows: list[list[VMobject]] = []
        for key, terms in lines:
            line_rows.append([])
            self.line_texts.append(spaced([term.text for term in terms]))
            self.line_terms.append([])
            parts = VGroup()
            for row in line_rows_of(terms):
                line = store.text(spaced([terms[i].text for i in row]), WORKED_EM,
                                  palette.text)
                if line.width > CAPTION_WIDTH:  # (one term wider than the frame: shrunk)
                    line.scale(CAPTION_WIDTH / line.width)
                glyphs, at = list(line.submobjects), 0
                # The row is drawn as its terms (each a group of the text's glyphs), so
                # that every term is part of the caption when it is revealed; each in its
                # colour, hidden until then (in one pass over the glyphs: it is a third
                # of the time a tensor's caption takes to make).
                row_parts = VGroup()
                for term in (terms[i] for i in row):
                    count = len("".join(term.text.split()))
                    colour = colours[term.role]
                    part = VGroup(*glyphs[at:at + count]).set_fill(colour, opacity=0) \
                        .set_stroke(colour, opacity=0)
                    at += count
                    parts.add(part)
                    row_parts.add(part)
                    self.terms.setdefault(key, []).append((term, part))
                    self.line_terms[-1].append((term, part))
                line_rows[-1].append(row_parts)
            self.lines.append(parts)
        # The pages: each a run of lines, set in the rows under the rule.
        self.pages = caption_pages(len(rows), [(key, len(cut)) for (key, _), cut
                                               in zip(lines, line_rows, strict=True)], most)
        self.page_of = {lines[i][0]: number for number, page in enumerate(self.pages)
                        for i in page}
        self.page = 0
        self.page_rows: list[list[VMobject]] = []
        for page in self.pages:
            self.page_rows.append([row for i in page for row in line_rows[i]])
            for number, row in enumerate(self.page_rows[-1]):
                row.move_to([0, -(len(rows) + number) * ROW_PITCH, 0])
        for number, row in enumerate(rows):  # rows evenly spaced, centred
            row.move_to([0, -number * ROW_PITCH, 0])
        rows.extend(row for page in self.page_rows for row in page)
        self.rows = rows
        self.add(*rows)
        self.shown: list[str] = []

    def turn(self, key: Any) -> list:
        """The animations that clear the page shown if ``key``'s lines are on another
        (none if they are on this one); that page is the one shown after."""
        page = self.page_of.get(key, self.page)
        if page == self.page:
            return []
        cleared, self.page = self.page_rows[self.page], page
        return [row.animate.set_fill(opacity=0).set_stroke(opacity=0) for row in cleared]

    def page_text(self) -> str:
        """The words of the page shown, as on screen when all is shown (the rule with
        the first page: it has been read by the next)."""
        lines = [self.line_texts[i] for i in self.pages[self.page]] if self.pages else []
        rule = [self.rule_text] if self.rule and self.page == 0 else []
        return "\n".join([*rule, *lines])

    def reveal(self, key: Any, phase: str) -> list:
        """The animations that show the terms of ``key``'s lines that appear at ``phase``."""
        found = [(term, part) for term, part in self.terms.get(key, []) if term.phase == phase]
        self.shown.extend(term.text for term, _ in found)
        return [part.animate.set_fill(opacity=1) for _, part in found]

    def adds(self, edge: tuple) -> bool:
        """Whether the caption adds ``edge``'s share to the gradient there (a fork's sum
        line ``∂c/∂b = 6 + 6 = 12``), as the engine did."""
        return any(term.phase == "share" for term, _ in self.terms.get((edge, "total"), []))

    def text(self) -> str:
        """The caption's words as on screen when all is shown: the rule, then a line each."""
        return "\n".join([*([self.rule_text] if self.rule else []), *self.line_texts])



def step_caption(G: Any, step: Any, caption: Caption, rule: str, store: TextStore,
                 palette: Theme, precision: int, most: int | None = None) -> StepCaption:
    """The caption of backward ``step`` with its terms split: each share's line keyed by
    its edge, then its sum line keyed by ``(edge, "total")``; the seed's lines by "seed";
    shown ``most`` rows at a time."""
    return StepCaption(store, palette, rule, caption_lines(G, step, caption, precision), most)


def caption_pages(rule_rows: int, lines: Sequence[tuple[Any, int]],
                  most: int | None) -> list[list[int]]:
    """The pages of a caption whose rule takes ``rule_rows`` and whose ``lines`` are
    (key, rows): each page the indices of a run of lines that fits under the rule in
    ``most`` rows (None: one page), a share's lines (its line and its sum line) not
    parted unless together they are taller than that; a line taller alone on a page."""
    shares: list[list[int]] = []
    for index, (key, _) in enumerate(lines):
        if shares and _share_of(lines[shares[-1][0]][0]) == _share_of(key):
            shares[-1].append(index)
        else:
            shares.append([index])
    if most is not None:  # (a share too tall for a page: its lines, one by one)
        shares = [part for share in shares for part in (
            [share] if rule_rows + sum(lines[i][1] for i in share) <= most
            else [[i] for i in share])]
    pages: list[list[int]] = []
    used = 0
    for share in shares:
        rows = sum(lines[i][1] for i in share)
        if pages and (most is None or rule_rows + used + rows <= most):
            pages[-1].extend(share)
            used += rows
        else:
            pages.append(list(share))
            used = rows
    return pages


def _share_of(key: Any) -> Any:
    """The share a line keyed ``key`` belongs to: its edge (a sum line's too)."""
    if isinstance(key, tuple) and key[:1] == ("after",):  # (the step's last lines: together)
        return "after"
    return key[0] if isinstance(key, tuple) and key[1:] == ("total",) else key


def caption_lines(G: Any, step: Any, caption: Caption,
                  precision: int) -> list[tuple[Any, Sequence[Term]]]:
    """The worked lines of ``step``'s caption (None: the seed) as terms, keyed as
    step_caption keys them."""
    if step is None:
        return _subscripted([("seed", [Term(line, "gradient", "travel")])
                             for line in caption.worked])
    if step.op is None:  # a rolled loop's closing step: a sum line for each shared value
        return _subscripted([(("closing", value), sum_terms(line))
                             for value, line in zip(step.updated, caption.worked, strict=True)])
    names = value_names(G)
    upstream_name = partial_name(differentiated(G, names), names[step.result]).text
    upstream = step.grads.get(step.result)
    written = [upstream_name] + ([] if upstream is None else
                                 [number_text(upstream, precision),
                                  f"({number_text(upstream, precision)})"])
    form = step_form(G, step)
    lines: list[tuple[Any, Sequence[Term]]] = []
    for edge, worked in caption.edges:
        template = form.numbers[G.edges[edge]["arg"]] if form.numbers else "$g"
        g_first = template.lstrip("(−").startswith("$g")
        result = number_text(G.edges[edge]["grad"], precision)
        lines.append((edge, line_terms(worked[0], written, g_first, result)))
        lines.extend(((edge, "total"), sum_terms(line)) for line in worked[1:])
    # What the step says but of its shares: a module's parameters' gradients (views.py),
    # as its last lines; or that it has no gradient to pass on. They appear as the step
    # ends (finish_story).
    told = {line for _, worked in caption.edges for line in worked}
    lines.extend((("after", number), [Term(line, "gradient" if held else "note", "land")])
                 for number, line in enumerate(line for line in caption.worked
                                               if line not in told)
                 for held in (G.nodes[step.op].get("parameters") is not None,))
    return _subscripted(lines)


def finish_story(scene: Any, step: Any) -> None:
    """The end of ``step``: the lines of its caption that no share showed (caption_lines'
    "after"), and the gradients of the parameters its module's operator holds."""
    caption, op = scene.caption, scene.diagram.ops[step.op]
    if ("after", 0) in caption.terms:  # (on a page of their own, if the caption is paged)
        scene.turn_page(("after", 0))
    shown = [reveal for number in range(len(caption.lines))
             for reveal in caption.reveal(("after", number), "land")]
    if len(op.held) or shown:
        scene.play(*shown, *([op.held.animate.set_opacity(1)] if len(op.held) else []),
                   run_time=scene.t(0.5) * scene.pace.motion)


def _subscripted(lines: list[tuple[Any, Sequence[Term]]]) -> list[tuple[Any, Sequence[Term]]]:
    """The terms written as the store sets them (W₁, not W1: one glyph a character), a
    matrix wider than the caption in pieces of whole rows (_matrix_pieces)."""
    return [(key, [piece for term in terms
                   for piece in _matrix_pieces(replace(term, text=subscripted(term.text)))])
            for key, terms in lines]


def _matrix_pieces(term: Term) -> list[Term]:
    """``term`` as pieces no wider than the caption (after an "="), if it is a matrix wider
    than that ([a, b; c, d; …]): cut after the "; " between its rows (a single row's ", "
    between its entries), each piece ending in the mark but the last, so that the pieces
    joined by spaces are the term as written."""
    text = term.text
    room = CAPTION_WIDTH - text_width("≈ ", WORKED_EM)  # (a row may start with its "=")
    if not text.lstrip("(−").startswith("[") or text_width(text, WORKED_EM) <= room:
        return [term]
    mark = ";" if "; " in text else ","
    pieces = [""]
    for part in text.split(mark + " "):
        joined = f"{pieces[-1]} {part}" if pieces[-1] else part
        if pieces[-1] and text_width(joined + mark, WORKED_EM) > room:
            pieces.append(part)
        else:
            pieces[-1] = joined
        pieces[-1] += mark
    pieces[-1] = pieces[-1][:-1]
    return [replace(term, text=piece) for piece in pieces]


def forward_terms(line: ForwardLine) -> list[tuple[Any, Sequence[Term]]]:
    """A forward op's line (forward_lines) as the terms of a caption keyed "forward": the
    equation in names as the operands travel in, their numbers as they meet at the op,
    the result as it lands in its box; the terms joined by spaces are the line."""
    def terms(text: str, phase: str) -> list[Term]:
        return [Term(token, "operator" if token in _OPERATORS else "value", phase)
                for token in _tokens(text)]

    found: list[Term] = []
    for part, phase in ((line.named, "travel"), (line.expression, "travel"),
                        (line.numbers, "meet")):
        if part:
            found += [Term("=", "operator", phase)] if found else []
            found += terms(part, phase)
    if line.result:
        found += [Term(line.sign, "operator", "land"), *terms(line.result, "land")]
    if line.shape:  # (", 64 × 16": the comma on the term before it)
        found[-1] = replace(found[-1], text=found[-1].text + ",")
        found.append(Term(line.shape, "value", "land"))
    if line.note:
        found.append(Term(line.note.strip(), "note", "land"))
    return _subscripted([("forward", found)])


def _tokens(text: str) -> list[str]:
    """``text`` cut at its spaces outside brackets and parentheses."""
    tokens, depth = [""], 0
    for char in text:
        depth += (char in "([") - (char in ")]")
        if char == " " and depth == 0:
            tokens.append("")
        else:
            tokens[-1] += char
    return [token for token in tokens if token]


def caption_rows(rule: str, lines: Sequence[tuple[Any, Sequence[Term]]],
                 most: int | None = None) -> int:
    """How many rows a caption of ``rule`` and ``lines`` takes, shown ``most`` rows at
    a time (as StepCaption sets it): its rule's and its tallest page's."""
    rule_rows = len(wrapped_words(rule, RULE_EM)) if rule else 0
    counted = []
    for key, terms in lines:
        counted.append((key, len(line_rows_of(terms))))
    pages = caption_pages(rule_rows, counted, most)
    return rule_rows + max((sum(counted[i][1] for i in page) for page in pages), default=0)


def spaced(texts: Sequence[str]) -> str:
    """Terms written in a row: a space between two, none inside a bracket the line's
    terms open and close (``(∂loss/∂(kᵀ))ᵀ``, as the caption writes it)."""
    out = ""
    for text in texts:
        out += text if not out or out.endswith("(") or text.startswith(")") else " " + text
    return out


def line_rows_of(terms: Sequence[Term]) -> list[list[int]]:
    """A worked line's rows, as the indices of their terms: cut before an "=" or "≈" (or
    a note) where the line is wider than the caption; a row still too wide cut again
    before its other operators (· ⊙ +); terms are never cut."""
    texts = [term.text for term in terms]
    cuts = [term.role == "note" or (term.role == "operator" and term.text in ("=", "≈"))
            for term in terms]
    rows: list[list[int]] = []
    for row in wrapped(texts, cuts, WORKED_EM):
        if text_width(spaced([texts[i] for i in row]), WORKED_EM) <= CAPTION_WIDTH:
            rows.append(row)
            continue
        finer = [k > 0 and (terms[i].role in ("operator", "note")
                            or texts[i - 1].endswith((";", ",")))  # (a matrix's piece)
                 for k, i in enumerate(row)]
        rows.extend([row[k] for k in part]
                    for part in wrapped([texts[i] for i in row], finer, WORKED_EM))
    return rows


def _joined(*paths: VMobject) -> VMobject:
    """One path through ``paths`` in turn, with straight pieces between them."""
    joined = VMobject()
    joined.start_new_path(paths[0].get_start())
    for path in paths:
        joined.add_line_to(path.get_start())
        joined.append_points(path.points)
    return joined


def _part(path: VMobject, end: float) -> VMobject:
    piece = VMobject()
    piece.pointwise_become_partial(path, 0, end)
    return piece


def share_story(scene: Any, step: Any, edge: tuple, pace: Pace, *, stop: bool,
                fork: bool) -> None:
    """Play one share of ``step``: the upstream gradient travels from the result's slot
    back along the edges to near the operand, meets the local derivative's factors, and
    the product the IR recorded on ``edge`` lands in the operand's slot (at a fork,
    beside the gradient so far, then their recorded sum); ``stop``: a dead ReLU, where
    it stops at a bar instead; ``fork``: the operand sends its value to several ops,
    so the share stays written on its edge too. The caption's terms appear as the
    motion reaches them."""
    G, diagram, palette = scene.graph, scene.diagram, scene.palette
    scene.turn_page(edge)
    caption: StepCaption = scene.caption
    seconds = durations(pace, scene.speed)
    u = edge[0]
    follow = scene.follow([u, step.op])  # (an operand out of view: the camera goes to it)
    if follow:
        scene.play(*follow, run_time=seconds["travel"] * 0.6)
    box = diagram.values[u]
    s = diagram.scale_factor
    (result_edge,) = G.out_edges(step.op, keys=True)
    upstream = scene.grad_labels[step.result]
    token = upstream.copy().set_z_index(Z_FLYING)
    inbound = diagram.edges[result_edge].backward_path()
    outbound = diagram.edges[edge].backward_path()
    meet_at = 0.3 if stop else 0.78
    route = _joined(VMobject().set_points_as_corners([upstream.get_center(),
                                                       inbound.get_start()]),
                    inbound, _part(outbound, meet_at))
    ease = rate_functions.ease_in_out_sine
    travel = [Along(token, route, rate_func=ease),
              flash(inbound, palette.grad, s), flash(_part(outbound, meet_at), palette.grad, s)]
    if stop:
        bar = stop_bar(outbound, meet_at, palette, scene.store, s)
        scene.marks.extend(bar)
        travel.append(FadeIn(VGroup(*bar)))
    scene.play(*travel, *caption.reveal(edge, "travel"), run_time=seconds["travel"])
    meeting = token.get_center()
    factors = [scene.data_labels.get(source) or diagram.values[source].data_label()
               for source in factor_sources(G, step, edge)]
    flying = VGroup(token)
    if factors:
        copies = [factor.copy().set_color(palette.saved).set_z_index(Z_FLYING)
                  for factor in factors]
        outlines = [_outline(factor, palette.saved, s) for factor in factors]
        scene.marks.extend(outlines)
        targets = VGroup(*(c.copy() for c in copies), token.copy()).arrange(RIGHT, buff=4 * s)
        targets.move_to(meeting)
        scene.play(*(FadeIn(outline) for outline in outlines),
                   *(Moved(c, target.get_center()) for c, target in zip(copies, targets[:-1],
                                                                         strict=True)),
                   token.animate.move_to(targets[-1]), *caption.reveal(edge, "meet"),
                   run_time=seconds["meet"])
        flying = VGroup(*copies, token)
    else:
        reveal = caption.reveal(edge, "meet")
        if reveal:
            scene.play(*reveal, run_time=seconds["meet"] / 2)
    dead = scene.dead_edges.get(edge)
    if stop:
        label = box.grad_label(G.edges[edge]["running"], scene.dead_values.get(u))
        scene.play(FadeOut(flying, scale=0.4), scene.mark_value(u, label), FadeIn(label),
                   *caption.reveal(edge, "land"), run_time=seconds["land"])
        _land(scene, u, label)
        return
    contribution = G.edges[edge]["grad"]
    product = Table(format_array(contribution, scene.precision, MAX_ITEMS), scene.store,
                    box.em, palette.grad, bracketed=box.bracketed, dead=dead,
                    dead_color=palette.dead_text, dead_fill=palette.dead_fill)
    product.move_to(meeting).set_z_index(Z_FLYING)
    on_edge = [FadeIn(scene.edge_label(edge), scale=1.3)] if fork else []
    old = scene.grad_labels.get(u)
    if old is None and u in G.graph.get("loop_arrived", ()) and caption.adds(edge):
        # A rolled loop's weight that the other repetitions reached while this one was
        # swept (an order that mixes them): its sum so far comes in now, then this share.
        old = box.grad_label(G.graph["loop_before"][u], scene.dead_values.get(u))
        scene.play(FadeIn(old, scale=1.3), scene.mark_value(u, old),
                   run_time=seconds["land"] * 0.5)
        _land(scene, u, old)
    if old is None:
        label = box.grad_label(G.edges[edge]["running"], scene.dead_values.get(u))
        scene.play(Succession(Becomes(flying, product,
                                                   run_time=seconds["land"] * 0.4),
                              Becomes(product, label,
                                                   run_time=seconds["land"] * 0.6)),
                   scene.mark_value(u, label), *on_edge, *caption.reveal(edge, "land"),
                   run_time=seconds["land"])
        _land(scene, u, label)
        return
    if not caption.adds(edge):
        # The engine did not add the share to the gradient there (a student's engine
        # that overwrote it; the caption says so): the share takes its place.
        label = box.grad_label(G.edges[edge]["running"], scene.dead_values.get(u))
        scene.play(Succession(Becomes(flying, product,
                                                   run_time=seconds["land"] * 0.4),
                              Becomes(product, label,
                                                   run_time=seconds["land"] * 0.6)),
                   FadeOut(old), scene.mark_value(u, label), *on_edge,
                   *caption.reveal(edge, "land"), run_time=seconds["land"])
        _land(scene, u, label)
        return
    scene.play(Becomes(flying, product), *on_edge, *caption.reveal(edge, "land"),
               run_time=seconds["land"] * 0.6)
    add_share(scene, u, edge, product, seconds)


def add_share(scene: Any, u: Any, edge: tuple, share: Table, seconds: dict) -> None:
    """A fork: ``share`` goes beside the gradient so far (``6 + 6``), then the two
    become the running sum the IR recorded after it (``12``)."""
    _sum_in(scene, u, share, (edge, "total"), scene.graph.edges[edge]["running"], seconds,
            ("share", edge))


def _sum_in(scene: Any, u: Any, share: VMobject, key: Any, total: Any, seconds: dict,
            moment: tuple) -> None:
    """``share`` goes beside ``u``'s gradient so far, with a plus, as the caption's line
    ``key`` shows the terms added; then they become ``total``, the engine's sum, as the
    line shows it. ``moment`` goes in the scene's timeline as the share arrives."""
    box, palette = scene.diagram.values[u], scene.palette
    old = scene.grad_labels[u]
    scene.turn_page(key)  # (a share too tall for a page has its sum on the next)
    caption: StepCaption = scene.caption
    signs = [scene.store.text("+", box.em, palette.grad)]
    # A negative number after the plus in parentheses, as the caption writes it:
    # 0 + (−2.649), not 0 + −2.649.
    entries = getattr(share, "entries", ())
    if len(entries) == 1 and str(getattr(entries[0], "text", "")).startswith(("−", "-")):
        signs += [scene.store.text(mark, box.em, palette.grad) for mark in "()"]
    row = VGroup(old.copy(), signs[0], *signs[1:2], share.copy(), *signs[2:])
    row.arrange(RIGHT, buff=0.25 * box.em)
    for paren in signs[1:]:  # (a parenthesis hugs the number)
        paren.shift((0.17 if paren is signs[1] else -0.17) * box.em * RIGHT)
    room = box.frame.width * 0.92
    if row.width > room:
        row.scale(room / row.width)
    row.move_to(box.grad_slot)
    # From the rule between value and gradient rightwards, never over the value: a row
    # wider than the gradient's side runs on past the box's edge, on its plate.
    value = scene.data_labels.get(u)
    bound = value.get_right()[0] + 0.5 * box.em if value is not None else old.get_left()[0]
    if row.get_left()[0] < bound:
        row.shift((bound - row.get_left()[0]) * RIGHT)
    placed = row[3] if len(signs) > 1 else row[2]  # (where the share goes)
    plate = RoundedRectangle(corner_radius=0.15 * box.em, width=row.width + 0.3 * box.em,
                             height=row.height + 0.2 * box.em, stroke_width=0)
    plate.set_fill(palette.highlight_fill, 1).move_to(row).set_z_index(Z_MARK)
    for sign in signs:  # (the row's own: where they are drawn)
        sign.set_z_index(Z_FLYING)
    scene.marks.append(plate)
    scene.bring_to_front(old)
    scene.play(FadeIn(plate), old.animate.move_to(row[0]).scale(row[0].width / old.width),
               *(FadeIn(sign) for sign in signs),
               share.animate.move_to(placed).scale(placed.width / share.width),
               *caption.reveal(key, "share"), run_time=seconds["total"])
    scene.timeline.append((*moment, scene.time))
    scene.wait(seconds["total"] / 2)
    new = box.grad_label(total, scene.dead_values.get(u))
    parts = VGroup(old, *signs, share).set_z_index(Z_FLYING)
    scene.play(Becomes(parts, new), FadeOut(plate), scene.mark_value(u, new),
               *caption.reveal(key, "total"), run_time=seconds["total"])
    scene.marks.remove(plate)
    _land(scene, u, new)


def closing_story(scene: Any, step: Any, pace: Pace) -> None:
    """A rolled loop's closing step (closing.py): the loop's back edge lit, the shares
    of the repetitions not drawn come round it, as words (the caption writes their
    numbers), to each shared value in turn, whose gradient becomes the engine's sum."""
    shares = scene.graph.graph.get("loop_shares", {})
    loops = list(scene.diagram.loops.values())
    # The words come where the loop's count is written: it gives way to them meanwhile.
    mark = loops[0].mark if loops else None
    hidden = [mark.animate.set_fill(opacity=0)] if mark is not None else []
    for index, value in enumerate(step.updated):
        if value not in scene.diagram.values:
            continue
        seconds = durations(share_pace(pace, index), scene.speed)
        box = scene.diagram.values[value]
        # (as short as the count it stands in for: the caption says whose they are)
        count = len(shares.get(value, ()))
        said = f"⟲ {count} share{'s' if count != 1 else ''}" if count else "⟲ the others'"
        words = scene.store.text(said, box.em, scene.palette.grad).set_z_index(Z_FLYING)
        words.move_to(mark if mark is not None else box.grad_slot)
        scene.play(FadeIn(words), *hidden, run_time=seconds["travel"])
        hidden = []
        if value in scene.grad_labels:
            _sum_in(scene, value, words, ("closing", value), step.grads[value], seconds,
                    ("loop", value))
            continue
        # (no share of the drawn repetition: the words become its gradient)
        new = box.grad_label(step.grads[value], scene.dead_values.get(value))
        scene.play(Becomes(words, new), scene.mark_value(value, new),
                   *scene.caption.reveal(("closing", value), "share"),
                   *scene.caption.reveal(("closing", value), "total"),
                   run_time=seconds["total"])
        _land(scene, value, new)
    if mark is not None:
        scene.play(mark.animate.set_fill(opacity=1), run_time=scene.t(0.3))


def _land(scene: Any, u: Any, label: Table) -> None:
    scene.grad_labels[u] = label
    scene.add(label)
    scene.timeline.append(("gradient", u, scene.time))


def _outline(mobject: VMobject, colour: str, scale: float) -> VMobject:
    """A rounded outline round a box's forward value: the factor read from there."""
    frame = RoundedRectangle(corner_radius=3 * scale, width=mobject.width + 6 * scale,
                             height=mobject.height + 4 * scale, stroke_width=2.5)
    return frame.set_stroke(colour, opacity=0.9).move_to(mobject).set_z_index(Z_MARK)


def seed_story(scene: Any, seconds: float, queued: Sequence[Any]) -> None:
    """The seed: a 1 appears in blue at each root as its caption appears (with the
    ``queued`` animations: the caption coming in)."""
    caption: StepCaption = scene.caption
    labels = []
    # (and a rolled loop's shared values, drawn at an earlier repetition: the shares
    # of the later ones, which backward reached first)
    for value, seed in start_grads(scene.graph).items():
        label = scene.diagram.values[value].grad_label(seed)
        scene.grad_labels[value] = label
        labels.extend([scene.mark_value(value, label), FadeIn(label, scale=1.6)])
    scene.play(*queued, *labels, *caption.reveal("seed", "travel"),
               run_time=seconds)
    scene.timeline.extend(("gradient", value, scene.time) for value in scene.grad_labels)


def gate_stop(scene: Any, step: Any, edges: Sequence[tuple]) -> set[tuple]:
    """The operand edges of ``step`` through which nothing passes (a ReLU dead on all
    of the edge's entries)."""
    op_node = scene.diagram.ops[step.op]
    if not op_node.dead:
        return set()
    return {edge for edge in edges
            if (dead := scene.dead_edges.get(edge)) is not None and bool(np.all(dead))}

