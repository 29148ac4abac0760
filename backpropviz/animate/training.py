"""The clip of a training run: the first pass told in full, then the others at speed.

The first pass is the sweep's story (sweep.py: the graph, the forward pass,
the backward sweep), followed by the update: each parameter's number turns
into the value the script left in it, with the rule and its numbers in the
caption. Then the camera steps back to make room for the loss curve beside
the graph, and each later pass plays at speed: its forward values replace
the last pass's (the parameters' start where the update left them), blue
pulses run back through its backward order and its gradients appear, then
its update; the curve grows a point a pass. The clip ends on the run's
figure (train_figure.py): the loss and the parameters' paths.

Every pass's numbers are its own IR's; a loop whose graph changes between
passes cannot share one drawing and is refused in a sentence.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

import networkx as nx
import numpy as np
from manim import (
    DOWN,
    RIGHT,
    UP,
    AnimationGroup,
    Circle,
    Create,
    Dot,
    LaggedStart,
    Line,
    SurroundingRectangle,
    VGroup,
    VMobject,
    config,
)

from ..formatting import MAX_ITEMS, display_number, format_array
from ..memory_chart import x_ticks
from ..names import differentiated, value_names
from ..options import Options
from ..steps import gradient_history
from ..style import THEMES, VALUE_PT
from ..train_figure import (
    Curve,
    line_span,
    loss_curve,
    parameter_curves,
    require_passes,
    value_ticks,
)
from ..training import Run
from ..updates import parameter_nodes, start_line, update_line
from ..views import drawn_graph
from .fades import Becomes, FadeIn, FadeOut
from .formats import MAX_NODES, AnimateError, check_format, check_size, check_video
from .mobjects import Z_BADGE, Z_MARK, ValueNode
from .pacing import frames_up, reading_time
from .render import render_scene
from .screen import (
    BAND_GAP,
    CAPTION_EM,
    SIDE_MARGIN,
    TEXT_EM,
    TITLE_BOTTOM,
    caption_top,
    note_line,
    wrapped_words,
)
from .sweep import BackpropScene

__all__ = ["TrainingScene", "render_training_clip"]

# At speed (screen units): the whole graph in a strip of THUMB_HEIGHT under the title;
# under it, CARDS_GAP lower, the parameters' cards, their numbers at CARD_EM, CARD_GAP
# apart, down to CARDS_BOTTOM (above the caption's rows), and the loss curve right of
# them, CURVE_GAP away: CURVE_MIN wide, its height CURVE_ASPECT of that.
THUMB_HEIGHT, CARDS_GAP, CARDS_BOTTOM = 1.8, 0.35, -2.0
CARD_EM, CARD_GAP = 1.2 * TEXT_EM, 0.6
CURVE_MIN, CURVE_ASPECT, CURVE_GAP = 3.6, 0.75, 0.6
# The end shows the loss and at most this many parameters.
END_PANELS = 4
# An update's caption takes at most this many rows (of the band's four).
UPDATE_ROWS = 3
# A pass at speed: its forward values and its backward sweep, in seconds (its captions
# stay until they can be read).
FAST_FORWARD, FAST_BACKWARD = 1.0, 1.4


class TrainingScene(BackpropScene):
    """A training run as a clip (see the module's docstring); ``run`` a training Run."""

    def __init__(self, run: Run, **kwargs: Any) -> None:
        require_passes(run)
        super().__init__(run.iterations[0].graph, **kwargs)
        self.run = run
        # What the clip showed, for its tests: each update's parameters' cells (pass,
        # name -> cells), each pass's forward values' cells, and the loss points.
        self.updates_shown: list[tuple[int, dict[str, list[list[str]]]]] = []
        self.values_shown: list[tuple[int, dict[Any, list[list[str]]]]] = []
        self.loss_points: list[float] = []
        # And each card's numbers as shown: (pass, name, value's cells, gradient's cells),
        # each time they change.
        self.cards_shown: list[tuple[int, str, list[list[str]], list[list[str]]]] = []
        self.cards: dict[str, ValueNode] = {}
        self.card_data: dict[str, Any] = {}
        self.card_grads: dict[str, Any] = {}

    def setup(self) -> None:
        # Each pass as drawn (groups closed), the first as the sweep draws it too.
        self.passes = [drawn_graph(it.graph) for it in self.run.iterations]
        shape = _structure(self.passes[0])
        for iteration, G in zip(self.run.iterations[1:], self.passes[1:], strict=True):
            if _structure(G) != shape:
                raise AnimateError(f"the graph of pass {iteration.index} differs from the "
                                   "first pass's, so the passes cannot share one drawing; draw "
                                   "that pass alone (--iteration), or the page, which draws "
                                   "each pass")
        names = value_names(self.graph)
        self.top = differentiated(self.graph, names).text if self.graph.graph.get("seeds") \
            else "L"
        super().setup()
        self.parameter_nodes = parameter_nodes(self.graph, names)
        self.curve: VGroup | None = None
        self.curve_number: VMobject | None = None  # the newest loss, by its point

    def rows_needed(self) -> int:
        """The caption band's rows: the sweep's, and as many as the first update's caption
        takes, which the full view shows under the graph too (it had run over the graph's
        lowest boxes)."""
        lines = self.update_lines(self.run.iterations[0])
        rows = sum(len(wrapped_words(line, CAPTION_EM, at_equals=True)) for line in lines)
        return max(super().rows_needed(), rows)

    def diagram_numbers(self) -> tuple[nx.MultiDiGraph, dict[Any, list], dict[Any, list]]:
        """Boxes with room for every pass's numbers: the layout is made from a copy of the
        first pass whose values and gradients are, box by box, the widest any pass drawn
        there (never drawn itself), and the columns fit every pass's values and gradients
        and the values the updates leave."""
        passes = self.passes
        sized = self.graph.copy()
        for node, attrs in sized.nodes(data=True):
            if attrs["kind"] != "value":
                continue
            for key in ("data", "grad"):
                held = [G.nodes[node][key] for G in passes
                        if node in G and G.nodes[node].get(key) is not None]
                if held:
                    attrs[key] = max(held, key=lambda x: _text_width(x, self.precision))
        grads: dict[Any, list] = {}
        for G in passes:
            for node, history in gradient_history(G).items():
                grads.setdefault(node, []).extend(history)
        others: dict[Any, list] = {node: [G.nodes[node]["data"] for G in passes[1:]]
                                   for node in self.graph if node in passes[-1]
                                   and self.graph.nodes[node]["kind"] == "value"}
        names = value_names(self.graph)
        for name, node in parameter_nodes(self.graph, names).items():
            others.setdefault(node, []).extend(
                it.parameters[name].after for it in self.run.iterations if name in it.parameters)
        self._numbers = sized, grads, others  # (the cards' columns fit them too)
        return sized, grads, others

    def _card_shown(self, k: int, name: str, data: Any, grad: Any) -> None:
        self.cards_shown.append((k, name, format_array(data, self.precision, MAX_ITEMS),
                                 format_array(grad, self.precision, MAX_ITEMS)))

    # ------------------------------------------------------------ the story

    def construct(self) -> None:
        self.show_title_card()
        self.show_graph()
        self.play_forward()
        self.play_backward()
        self.play_update(0)
        self.make_room()
        for k in range(1, len(self.run.iterations)):
            self.play_pass_at_speed(k)
            self.play_update(k)
        self.show_run()

    def title_lines(self) -> list[str]:
        """What the clip goes on to show: the loop's passes, each forward, backward and
        an update (its rate, where the updates say one)."""
        passes = self.run.iterations
        rates = {update.rate for it in passes for update in it.parameters.values()}
        rate = (f" (η = {display_number(rates.pop(), self.precision)})"
                if len(rates) == 1 and None not in rates else "")
        shown = (f"{len(passes)} of the loop's {self.run.total} passes"
                 if self.run.total > len(passes) else f"the loop's {len(passes)} passes")
        return [f"then {shown} in turn: forward, backward, and each parameter's update"
                f"{rate}, the first told in full"]

    def play_update(self, k: int) -> None:
        """Each parameter's number becomes the value the update left, its box outlined;
        the caption writes each update with its numbers, held until it can be read."""
        start = self.time
        iteration = self.run.iterations[k]
        if k == 0:  # (the camera shows every box it updates, above the caption's band)
            self.focus([node for name in iteration.parameters
                        if (node := self.parameter_nodes.get(name)) is not None])
        lines = self.update_lines(iteration)
        self.set_lines(lines, equations=True)
        self.clear_marks()
        turns, shown = [], {}
        for name, update in iteration.parameters.items():
            node = self.parameter_nodes.get(name)
            if node is None:
                continue
            box = self.diagram.values[node]
            new = box.data_label(update.after)
            turns.append(Becomes(self.data_labels[node], new))
            self.data_labels[node] = new
            card = self.cards.get(name)
            if card is not None:  # at speed the card shows it, the strip's box too
                label = self.card_data[name]
                self.card_data[name] = card.data_label(update.after)
                turns.append(Becomes(label, self.card_data[name]))
                self._card_shown(k, name, update.after, self.passes[k].nodes[node]["grad"])
            zoom = self.camera.frame.width / config.frame_width  # (at speed, zoomed out)
            outline = SurroundingRectangle(box if card is None else card,
                                           color=self.palette.highlight_line,
                                           buff=0.06 * zoom, corner_radius=0.12 * zoom,
                                           stroke_width=4 * zoom)
            outline.set_z_index(Z_BADGE)
            self.marks.append(outline)
            turns.append(Create(outline))
            shown[name] = format_array(update.after, self.precision)
        title = "Update: each parameter takes a step against its gradient"
        self.set_title(title if k == 0 else f"Pass {iteration.index}: the update")
        self.play(*self._pending(), *turns, *self.grow_curve(k), run_time=self.t(0.9))
        self.updates_shown.append((k, shown))
        text = "\n".join(lines)
        # (at speed too: its numbers are the ones the cards turn to; it had stayed 1.6 s,
        # two lines of vectors)
        self.wait(frames_up(max(self.t(0.3), self.t(reading_time(text)) - (self.time - start)),
                            config.frame_rate))
        self.cue(text, start)

    def update_lines(self, iteration: Any) -> list[str]:
        """The caption of an update, in at most UPDATE_ROWS rows: each parameter's update
        with its numbers; else each one's rule; else the rule once for all (the numbers
        are in the boxes)."""
        updates = iteration.parameters.items()
        for numbers in (True, False):
            lines = [update_line(name, update, self.top, self.precision, numbers=numbers)
                     for name, update in updates]
            rows = sum(len(wrapped_words(line, CAPTION_EM, at_equals=True)) for line in lines)
            if rows <= UPDATE_ROWS:
                return lines
        rates = {update.rate for _, update in updates}
        if len(rates) == 1 and None not in rates:
            rule = (f"each parameter p ← p − η·∂{self.top}/∂p, with η = "
                    f"{display_number(rates.pop(), self.precision)}")
        else:
            rule = "each parameter takes the optimizer's step"
        return [f"{rule}: its box shows the value it takes"]

    def set_lines(self, lines: list[str], *, equations: bool = False) -> None:
        """Queue plain lines for the caption region, one under the other (``equations``:
        each cut before an "=" where it can be)."""
        block = VGroup(*(note_line(self.store, self.palette, line, at_equals=equations)
                         for line in lines))
        block.arrange(DOWN, buff=0.12)
        # (its top at the caption band's top: the graph's room ends above it)
        block = self.place(block, 0, caption_top(self.caption_rows) - block.height / 2)
        if self.caption is not None:
            self.remove(self.caption)
        self.caption = block
        self.caption_text = "\n".join(lines)
        self._queue(FadeIn(block, shift=0.1 * UP))

    def make_room(self) -> None:
        """The camera steps back until the whole graph fits a strip under the title, and
        under it come the parameters' cards (each parameter's box again, at the size of
        the caption's type: its value and its gradient, readable at speed) and the loss
        curve beside them; the title and caption go, the next ones are set for the new
        view."""
        diagram = self.diagram
        thumb_top = TITLE_BOTTOM - BAND_GAP
        zoom = max((diagram.width + 2 * SIDE_MARGIN) / config.frame_width,
                   diagram.height / THUMB_HEIGHT)
        strip = diagram.height / zoom  # (at most THUMB_HEIGHT: less for a long graph)
        center = np.array([diagram.get_center()[0],
                           diagram.get_center()[1] - zoom * (thumb_top - strip / 2), 0])
        overlay = [m for m in (self.title, self.caption, self.meter) if m is not None]
        self.clear_marks()
        frame = self.camera.frame
        self.play(*(FadeOut(m) for m in overlay),
                  frame.animate.scale(zoom * config.frame_width / frame.width).move_to(center),
                  run_time=self.t(1.0))
        self.title = self.caption = self.meter = None
        self.strip_view = (center, zoom)  # (the camera at speed, for reading back)
        # Under the strip, above the caption's rows: the cards on the left, the curve right.
        top = thumb_top - strip - CARDS_GAP
        bottom = CARDS_BOTTOM
        curve_width = CURVE_MIN
        cards_right = config.frame_width / 2 - SIDE_MARGIN - curve_width - CURVE_GAP

        def scene(x: float, y: float) -> np.ndarray:
            return center + zoom * np.array([x, y, 0])

        self.cards = self._make_cards(-config.frame_width / 2 + SIDE_MARGIN, cards_right,
                                      bottom, top, scene, zoom)
        x0, y0 = scene(cards_right + CURVE_GAP + 0.3, (top + bottom) / 2 - 0.15)[:2]
        height = min(curve_width * CURVE_ASPECT, top - bottom - 1.0)
        self.curve_box = (x0, y0, (curve_width - 0.3) * zoom, height * zoom, zoom)
        cards = [FadeIn(VGroup(card, self.card_data[name], self.card_grads[name]))
                 for name, card in self.cards.items()]
        self.play(*cards, *self.grow_curve(0), run_time=self.t(0.6))

    def _make_cards(self, left: float, right: float, bottom: float, top: float,
                    scene: Any, zoom: float) -> dict[str, ValueNode]:
        """Each parameter's card (at most END_PANELS): its box as the graph draws it, its
        numbers set at CARD_EM (less if the cards would not fit between ``left`` and
        ``right``, ``bottom`` and ``top``, screen units), in one row or two, whichever
        sets them larger, showing what it holds now; made in the scene at
        ``scene(x, y)`` of the screen, as the camera is."""
        layout, diagram = self.diagram.layout, self.diagram
        shown = [(name, node) for name, node in self.parameter_nodes.items()
                 if node in diagram.values][:END_PANELS]
        if not shown:
            return {}
        sizes = [(layout.nodes[node].width, layout.nodes[node].height) for _, node in shown]

        def rows_of(count: int) -> list[list[int]]:
            per_row = -(-len(shown) // count)
            return [list(range(len(shown)))[i:i + per_row]
                    for i in range(0, len(shown), per_row)]

        def scale_of(rows: list[list[int]]) -> float:
            widest = max(sum(sizes[i][0] for i in row) for row in rows)
            tall = sum(max(sizes[i][1] for i in row) for row in rows)
            gaps = CARD_GAP * (max(len(row) for row in rows) - 1)
            return min(CARD_EM / VALUE_PT, (right - left - gaps) / widest,
                       (top - bottom - CARD_GAP * (len(rows) - 1)) / tall)

        rows = max((rows_of(count) for count in (1, 2) if count <= len(shown)), key=scale_of)
        scale = scale_of(rows)
        _, grads, others = self._numbers
        heights = [max(sizes[i][1] for i in row) * scale for row in rows]
        y = (top + bottom) / 2 + (sum(heights) + CARD_GAP * (len(rows) - 1)) / 2
        cards: dict[str, ValueNode] = {}
        for row, height in zip(rows, heights, strict=True):
            y -= height / 2
            x = (left + right) / 2 - (sum(sizes[i][0] for i in row) * scale
                                      + CARD_GAP * (len(row) - 1)) / 2
            for i in row:
                (name, node), (width, box_height) = shown[i], sizes[i]
                box = diagram.values[node]
                card = ValueNode(node, box.attrs, scene(x + width * scale / 2, y),
                                 width * scale * zoom, box_height * scale * zoom, scale * zoom,
                                 self.palette, self.store, self.precision, grads.get(node, ()),
                                 True, others.get(node, ()), box.heading)
                cards[name] = card
                update = self.run.iterations[0].parameters.get(name)
                data = box.attrs["data"] if update is None else update.after
                grad = self.passes[0].nodes[node]["grad"]
                self.card_data[name], self.card_grads[name] = card.data_label(data), \
                    card.grad_label(grad)
                self._card_shown(0, name, data, grad)
                x += width * scale + CARD_GAP
            y -= height / 2 + CARD_GAP
        return cards

    def play_pass_at_speed(self, k: int) -> None:
        """Pass k at speed: the last pass's gradients go, its forward values are replaced
        by this pass's in the order they were computed, then blue pulses run back through
        its backward order and its gradients appear."""
        G, diagram = self.passes[k], self.diagram
        iteration = self.run.iterations[k]
        start = self.time
        self.clear_marks()
        self.set_title(f"Pass {iteration.index}: forward and backward, at speed")
        line = start_line(iteration, self.precision)
        if len(wrapped_words(line, CAPTION_EM)) > UPDATE_ROWS:  # (their numbers: on the cards)
            line = (f"Pass {iteration.index} starts from the parameters the last update left, "
                    "as their cards show them.")
        self.set_lines([line])
        gone = [FadeOut(label) for label in [*self.grad_labels.values(),
                                             *self.card_grads.values()]]
        self.grad_labels = {}
        turns, shown = [], {}
        for node in nx.topological_sort(G):
            attrs = G.nodes[node]
            if attrs["kind"] != "value":
                continue
            cells = format_array(attrs["data"], self.precision)
            shown[node] = cells
            if cells != format_array(self.passes[k - 1].nodes[node]["data"], self.precision):
                new = diagram.values[node].data_label(attrs["data"])
                turns.append(Becomes(self.data_labels[node], new))
                self.data_labels[node] = new
        self.values_shown.append((k, shown))
        self.play(*self._pending(), *gone, run_time=self.t(0.4))
        if turns:
            self.play(LaggedStart(*turns, lag_ratio=0.3), run_time=self.t(FAST_FORWARD))
        # The pass ends with each card's gradient, as its box in the strip gets it.
        cards = []
        for name, card in self.cards.items():
            grad = G.nodes[card.node]["grad"]
            self.card_grads[name] = card.grad_label(grad)
            cards.append(FadeIn(self.card_grads[name], scale=1.2))
            self._card_shown(k, name, G.nodes[card.node]["data"], grad)
        self.play(LaggedStart(*self._sweep_of(G), AnimationGroup(*cards), lag_ratio=0.5),
                  run_time=self.t(FAST_BACKWARD))
        # (its caption, what the pass starts from, stays until it can be read)
        rest = self.t(reading_time(self.caption_text)) - (self.time - start)
        if rest > 1e-3:
            self.wait(frames_up(rest, config.frame_rate))
        self.cue(self.caption_text, start)

    def _sweep_of(self, G: nx.MultiDiGraph) -> list[AnimationGroup]:
        """The seed, then per op of G's backward order its pulses back along its operand
        edges and the gradients its operands end the pass with (a constant's not shown)."""
        diagram, palette = self.diagram, self.palette
        beats = []
        for root, seed in G.graph.get("seeds", {}).items():
            label = self.grad_labels[root] = diagram.values[root].grad_label(seed)
            beats.append(AnimationGroup(FadeIn(label, scale=1.4)))
        for op in G.graph.get("backward_order", []):
            pulses, labels = [], []
            for u, v, key in G.in_edges(op, keys=True):
                if G.edges[u, v, key].get("grad") is None or G.nodes[u]["role"] == "const":
                    continue
                pulses.append(self._pulse(diagram.edges[(u, v, key)].backward_path(),
                                          palette.grad, 0.5, width=2.2))
                if u not in self.grad_labels and G.nodes[u]["grad"] is not None:
                    label = self.grad_labels[u] = diagram.values[u].grad_label(G.nodes[u]["grad"])
                    labels.append(FadeIn(label, scale=1.3))
            if pulses or labels:
                beats.append(AnimationGroup(*pulses, *labels))
        return beats

    # ------------------------------------------------------------ the loss curve

    def grow_curve(self, k: int) -> list:
        """The curve's next point, pass k's loss, joined to the last (its axes first);
        nothing before there is room for the curve (the first pass's update)."""
        if not hasattr(self, "curve_box") or k < len(self.loss_points):
            return []
        x0, y0, width, height, zoom = self.curve_box
        iterations = self.run.iterations
        top = max(it.loss for it in iterations) or 1.0
        last = max(1, iterations[-1].index)
        em = 0.28 * zoom

        def at(index: int, loss: float) -> list[float]:
            return [x0 + width * index / last, y0 - height / 2 + height * loss / top, 0]

        animations = []
        if self.curve is None:
            axes = VGroup(Line(at(0, 0), at(last, 0)), Line(at(0, 0), at(0, top)))
            axes.set_stroke(self.palette.text, width=2)
            title = self.store.text("loss", em, self.palette.text)
            title.next_to(at(0, top), UP, buff=0.8 * em).align_to(axes, [-1, 0, 0])
            scale = VGroup(self.store.text(display_number(top, self.precision), em * 0.8,
                                           self.palette.muted),
                           self.store.text("0", em * 0.8, self.palette.muted))
            scale[0].next_to(at(0, top), [-1, 0, 0], buff=0.12)
            scale[1].next_to(at(0, 0), [-1, 0, 0], buff=0.12)
            passes = self.store.text(f"passes {iterations[0].index}–{iterations[-1].index}",
                                     em * 0.8, self.palette.muted)
            passes.next_to(axes[0], DOWN, buff=0.15)
            self.curve = VGroup(axes, title, scale, passes).set_z_index(Z_MARK)
            animations.append(FadeIn(self.curve))
        loss = iterations[k].loss
        dot = Dot(at(iterations[k].index, loss), radius=0.07 * zoom, color=self.palette.text)
        animations.append(FadeIn(dot, scale=1.5))
        if self.loss_points:
            previous = at(iterations[k - 1].index, self.loss_points[-1])
            segment = Line(previous, dot.get_center()).set_stroke(self.palette.text, width=3)
            animations.append(Create(segment))
            self.curve.add(segment)
        self.curve.add(dot)
        # The newest point's number, in place of the last one's (none where the axis's
        # top says the same number, beside it).
        if self.curve_number is not None:
            animations.append(FadeOut(self.curve_number))
        shown = display_number(loss, self.precision)
        self.curve_number = None
        if shown != display_number(top, self.precision):
            number = self.store.text(shown, em, self.palette.text).set_z_index(Z_MARK)
            # (above its point: starting there in the curve's first half, else ending there)
            number.next_to(dot, UP, buff=0.1 * zoom)
            number.align_to(dot, [-1 if 2 * iterations[k].index < last else 1, 0, 0])
            self.curve_number = number
            animations.append(FadeIn(number))
        self.loss_points.append(loss)
        return animations

    def show_run(self) -> None:
        """The end: the run as its figure draws it (train_figure's curves), the loss on the
        left and each parameter's path on the right, filling the frame."""
        start = self.time
        frame = self.camera.frame
        self.play(*(FadeOut(m) for m in self.mobjects if m is not frame), run_time=self.t(0.6))
        self.title = self.caption = self.meter = None
        self.set_title("The run: the loss and the parameters, pass by pass", key=False)
        curves = parameter_curves(self.run)[:END_PANELS]
        x_max = max(1, self.run.iterations[-1].index + 1)
        # The loss on the left half of the screen, the parameters in a grid on the right.
        panels = [self.place(self._panel(loss_curve(self.run), (5.0, 4.8), x_max), -3.4, -0.2)]
        columns = 1 if len(curves) <= 2 else 2
        rows = max(1, -(-len(curves) // columns))
        size = (5.2 / columns - 1.0, 5.4 / rows - 1.1)
        for number, curve in enumerate(curves):
            row, column = divmod(number, columns)
            panels.append(self.place(self._panel(curve, size, x_max),
                                     1.5 + (column + 0.5) * 5.2 / columns,
                                     2.6 - (row + 0.5) * 5.4 / rows - 0.1))
        self.end_panels = panels
        self.play(LaggedStart(*(FadeIn(panel) for panel in panels), lag_ratio=0.2),
                  run_time=self.t(1.2))
        self.wait(self.t(4.0))
        self.cue("The run: the loss, and each parameter's path, pass by pass", start)

    def _panel(self, curve: Curve, size: tuple[float, float], x_max: int) -> VGroup:
        """One of the end's panels, in screen units, on the scale its figure's panel has
        (train_figure.value_ticks: the loss from 0, a parameter's line off the axes):
        ``curve``'s lines over the passes (the hollow point: the value the last update
        left), its name, its axis's ends, the passes numbered along the bottom, and for a
        single line its last number, on the side of its point away from the line."""
        width, height = size
        palette, em = self.palette, 0.26
        ticks = value_ticks(curve, from_zero=curve.name == "loss")
        low, high = ticks[0], ticks[-1]

        def at(x: float, y: float) -> list[float]:
            return [width * (x / x_max - 0.5), height * ((y - low) / (high - low) - 0.5), 0]

        axes = VGroup(Line(at(0, low), at(x_max, low)), Line(at(0, low), at(0, high)))
        axes.set_stroke(palette.text, width=2)
        heading = {"": curve.name, "entries": f"{curve.name}, each entry",
                   "norm": f"‖{curve.name}‖"}[curve.what]
        title = self.store.text(heading, em * 1.2, palette.text, serif=curve.name != "loss",
                                italic=curve.name != "loss")
        if title.width > width:  # (a long name: no wider than its panel)
            title.scale(width / title.width)
        title.next_to(at(0, high), UP, buff=0.4).align_to(axes, [-1, 0, 0])
        ends = VGroup(*(self.store.text(display_number(y, self.precision), em, palette.muted)
                        for y in (high, low)))
        ends[0].next_to(at(0, high), [-1, 0, 0], buff=0.12)
        ends[1].next_to(at(0, low), [-1, 0, 0], buff=0.12)
        passes = VGroup(*(self.store.text(f"{x:g}", em * 0.85, palette.muted)
                          .next_to(at(x, low), DOWN, buff=0.1) for x in x_ticks(x_max)))
        panel = VGroup(axes, title, ends, passes)
        single = len(curve.lines) == 1
        for number, line in enumerate(curve.lines):
            points = [at(x, y) for x, y in zip(curve.xs, line, strict=True)]
            if curve.after:
                points.append(at(curve.xs[-1] + 1, curve.after[number]))
            path = VMobject().set_points_as_corners(points)
            path.set_stroke(palette.text, width=4 if single else 2,
                            opacity=1.0 if single else 0.7)
            used = points[:len(line)]  # a point per pass, then the value left after
            panel.add(path, *(Dot(p, radius=0.05, color=palette.text) for p in used))
            if curve.after:
                panel.add(Circle(radius=0.06).move_to(points[-1])
                          .set_stroke(palette.text, width=2).set_fill(palette.backdrop, 1))
            if single:  # where the line ends (where it starts, the axis says)
                shown = [*line, *(curve.after or ())]
                last = self.store.text(display_number(shown[-1], self.precision), em,
                                       palette.text)
                # (as the figure writes it: under the end of a fall, over the end of a
                # rise, so that the line, coming from the left, runs clear of it; over
                # where under would reach the axis, and then above the line where it
                # starts, at the number's left)
                falls = len(points) > 1 and points[-2][1] > points[-1][1]
                under = falls and points[-1][1] - last.height - 0.2 > at(0, low)[1]
                last.next_to(points[-1], DOWN if under else UP, buff=0.12, aligned_edge=RIGHT)
                if falls and not under:
                    _, top = line_span(points, last.get_left()[0], last.get_right()[0])
                    clear = top + 0.12
                    last.shift(UP * max(0.0, clear - last.get_bottom()[1]))
                panel.add(last)
        return panel


def _text_width(x: Any, precision: int) -> int:
    """How many characters the widest row of ``x`` is drawn with (its entries as shown)."""
    return max(sum(len(cell) for cell in row) for row in format_array(x, precision))


def _structure(G: nx.MultiDiGraph) -> tuple:
    """What must be the same for two passes to share one drawing: nodes (and each value's
    shape) and edges."""
    return (tuple(sorted((str(node), str(attrs.get("shape"))) for node, attrs
                         in G.nodes(data=True))),
            tuple(sorted(map(str, G.edges(keys=True)))))


def render_training_clip(run: Run, path: str | os.PathLike, options: Options) -> pathlib.Path:
    """Write the run's clip to ``path`` (.mp4, .gif, .webm; .srt subtitles beside it),
    whole or not at all; return the path."""
    require_passes(run)
    target = pathlib.Path(path)
    suffix = check_format(target)
    check_video(options.theme, suffix)
    clip = options.clip()
    check_size(run.iterations[0].graph, clip.pop("max_nodes", MAX_NODES))
    clip.pop("phase")  # a training clip tells both passes
    return render_scene(lambda **kwargs: TrainingScene(run, **kwargs), target,
                        transparent=THEMES[options.theme].transparent, **clip)
