"""The story of a clip as a manim Scene: the graph, the forward pass, then the backward sweep."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np
from manim import (
    DL,
    DOWN,
    UP,
    UR,
    AnimationGroup,
    BackgroundRectangle,
    Create,
    LaggedStart,
    RoundedRectangle,
    VGroup,
    VMobject,
    config,
)

from ..captions import step_captions
from ..formatting import MAX_ITEMS, format_array
from ..layout import layout
from ..memory import MemoryStep, timeline
from ..names import headings, subscripted
from ..script import graph_of_script
from ..steps import backward_steps, dead_masks, gradient_history, plain_constants
from ..style import EXPRESSION_PT, THEMES
from ..views import drawn_graph
from .authoring import Authoring
from .camera import Room, View, column_heights, columns, view_of, whole_view
from .cards import recap_card, title_card
from .fades import Becomes, FadeIn, FadeOut, Moved
from .families import QuickFamilies
from .formats import AnimateError
from .forward import ForwardPass
from .mobjects import (
    Z_MARK,
    Z_NUMBER,
    Z_PULSE,
    GraphMobject,
    OpNode,
    Table,
    TextStore,
)
from .motion import dead_unit_note, overlap, pulse, ring_over, within
from .pacing import (
    Pace,
    frames_up,
    pace_of,
    reading_time,
    seed_pace,
    share_pace,
    shown_rule,
)
from .redraw import RedrawingWhatMoves
from .screen import (
    CAPTION_EM,
    PAGE_ROWS,
    ROW_PITCH,
    SIDE_MARGIN,
    TEXT_EM,
    TITLE_Y,
    caption_top,
    graph_room,
    meter_block,
    note_line,
    parameter_results,
    results_text,
    title_block,
)
from .story import (
    StepCaption,
    caption_lines,
    caption_rows,
    closing_story,
    finish_story,
    gate_stop,
    seed_story,
    share_story,
    step_caption,
)

__all__ = ["BackpropScene", "parameter_results"]

# The graph's numbers and names are set at 13 pt and more; at this scale (scene
# units per point) and the camera at rest, 13 pt is TEXT_EM: a graph too wide for
# its room at this scale is drawn wider than the frame, and the camera shows it
# a run of whole columns at a time (camera.py), zoomed in at most by ZOOM_IN.
MIN_SCALE = TEXT_EM / EXPRESSION_PT
ZOOM_IN = 0.5
# The title card and the recap are held this long beyond their reading time.
CARD_EXTRA = 0.5


class BackpropScene(ForwardPass, Authoring, QuickFamilies, RedrawingWhatMoves):
    """A clip of the forward and backward passes of an IR graph.

    Subclass it with ``example`` (a script path, run by the script front end,
    backward included) and optionally ``roots`` (names of the values to draw
    from; default: the script's outputs), or pass ``graph``. ``construct``
    tells the whole story; its parts (``show_graph``, ``play_forward``,
    ``play_seed``, ``play_step``...) can be called on their own by scenes
    that tell part of it.
    """

    example: str | os.PathLike | None = None
    roots: Sequence[str] = ()
    phase = "both"
    theme = "light"
    speed = 1.0
    rankdir = "LR"
    precision = 4
    show_memory = False  # the meter of the bytes kept for backward, under the title

    def __init__(self, graph: nx.MultiDiGraph | None = None, *, phase: str | None = None,
                 theme: str | None = None, speed: float | None = None,
                 rankdir: str | None = None, precision: int | None = None,
                 memory: bool | None = None, progress: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.graph = graph
        for name, value in (("phase", phase), ("theme", theme), ("speed", speed),
                            ("rankdir", rankdir), ("precision", precision),
                            ("show_memory", memory)):
            if value is not None:
                setattr(self, name, value)
        self.progress = progress

    # ------------------------------------------------------------ setup

    def setup(self) -> None:
        G = self.graph
        if G is None:
            if self.example is None:
                raise AnimateError(f"{type(self).__name__} needs a graph or an example script")
            G = self.graph = graph_of_script(self.example, self.roots, quiet=True)
        G = self.graph = drawn_graph(G)  # a group is one op, as in the pictures
        self.palette = THEMES[self.theme]
        if not self.palette.transparent:
            self.camera.background_color = self.palette.background
        self.store = TextStore()
        self.backward = bool(G.graph.get("backward_order")) and self.phase != "forward"
        self.steps = backward_steps(G) if self.backward else []
        self.captions = step_captions(G, self.precision) if self.backward else []
        self.results = parameter_results(G) if self.backward else []
        self.store.typeset([(tex, text) for _, tex, text in self.results], CAPTION_EM,
                           self.palette.text)
        self.dead_values, self.dead_edges = dead_masks(G) if self.backward else ({}, {})
        self.caption_rows = self.rows_needed()
        self.forward_captions = self.forward_lines_within(self.caption_rows) \
            if self.phase != "backward" else {}
        room = Room(*graph_room(self.caption_rows, self.show_memory))
        sized, shown, others = self.diagram_numbers()
        self.diagram = GraphMobject(G, layout(sized, rankdir=self.rankdir, theme=self.theme,
                                         precision=self.precision, legend=False,
                                         forward_only=not self.backward),
                               self.palette, self.store,
                               center=((room.left + room.right) / 2,
                                       (room.bottom + room.top) / 2, 0),
                               max_width=room.width, max_height=room.height, max_scale=1.0,
                               min_scale=MIN_SCALE, precision=self.precision, grads=shown,
                               gradient_slot=self.backward, others=others,
                               names=headings(G, self.precision),
                               plain=plain_constants(G, False))
        # The forward value and the gradient each box shows now.
        self.data_labels: dict[Any, Table] = {}
        self.grad_labels: dict[Any, Table] = {}
        self.edge_labels: dict[tuple, Table] = {}
        self.caption: VMobject | None = None
        self.title: VMobject | None = None
        # The camera's views: whole columns of the graph in its room (camera.py). The
        # whole graph's view is the overview; a graph that fits its room never pans.
        diagram = self.diagram
        parts = [*(box.frame for box in diagram.values.values()),
                 *(op.circle for op in diagram.ops.values())]
        self.columns = columns([(p.get_left()[0], p.get_right()[0]) for p in parts])
        self.room = room
        # What the views must hold across each column: its boxes and circles, the
        # contributions the sweep will write on edges (made now, as it will show them)
        # and the edges' points (a rolled loop's back edge, lowered to just over the
        # boxes, with its count); a long edge passes under the words' plates (on_plate).
        written = [self.edge_label(edge) for edge in G.edges(keys=True)
                   if G.edges[edge].get("grad") is not None and self._is_fork(edge[0])
                   and G.nodes[edge[0]].get("role") != "const"]
        corners = [corner[:2] for p in [*parts, *written]
                   for corner in (p.get_corner(DL), p.get_corner(UR))]
        curves = [edge.get_all_points()[:, :2] for edge in diagram.edges.values()] + [
            part.get_all_points()[:, :2] for loop in diagram.loops.values()
            for part in (loop.path, loop.mark)]
        self.heights = column_heights(self.columns, np.vstack([np.reshape(corners, (-1, 2)),
                                                               *curves]))
        self.whole = whole_view(self.columns, self.heights, room, config.frame_width)
        self.overview = self.whole.zoom if self.whole.zoom > 1 + 1e-6 else 1.0
        # The zoom at which the graph's smallest text (13 pt) is TEXT_EM on screen.
        self.most_zoom = diagram.scale_factor * EXPRESSION_PT / TEXT_EM
        self.view: View | None = None
        self.marks: list[VMobject] = []  # this step's highlights, gone at the next
        # The text of the caption region as shown (the .srt cue of the beat), and
        # a note added to it during the beat (a dead unit).
        self.caption_text = ""
        self.cue_notes: list[str] = []
        self.page_start = 0.0  # when the caption's page shown came on screen
        self.rules_read: set[str] = set()
        # Every cue as the clip shows it: (start, text), in order.
        self.cues: list[tuple[float, str]] = []
        # The bytes kept for backward, with the forward ops in the order the clip plays them.
        self.memory = timeline(G, order=self.forward_order())
        self.meter: VMobject | None = None
        self.meter_shown: list[int] = []  # the bytes the meter showed, in order
        # What happened when: ("step", op, start time) for each backward step,
        # ("gradient", value, time) when a value's gradient (or a new sum) is shown.
        self.timeline: list[tuple[str, Any, float]] = []
        self._beats_done = 0
        ops = sum(1 for _, kind in G.nodes(data="kind") if kind == "op")
        # show_graph, the inputs (or all values), each forward op, the seed, each step
        self._beats_total = 2 + (ops if self.phase != "backward" else 0) \
            + (1 + len(self.steps) if self.backward else 0)

    def diagram_numbers(self) -> tuple[nx.MultiDiGraph, dict[Any, list], dict[Any, list]]:
        """What sizes the boxes: the graph laid out (its numbers set each box's width),
        every gradient each box will show (its gradient columns fit the widest), and every
        other forward value it will show. Here the graph itself, its backward pass and no
        other value; a scene that shows other numbers in the same boxes (a training run's
        later passes) makes room for those too."""
        return self.graph, gradient_history(self.graph) if self.backward else {}, {}

    def t(self, seconds: float) -> float:
        """A duration at the scene's speed."""
        return seconds / self.speed

    # ------------------------------------------------------------ the story

    def construct(self) -> None:
        self.show_title_card()
        self.show_graph()
        if self.phase in ("forward", "both"):
            self.play_forward()
        else:
            self.show_values()
        if self.backward:
            self.play_backward()
        self.show_overview()
        self.show_recap()

    def show_graph(self) -> None:
        """The graph fades in as the SVG draws it, numbers not yet computed (the title
        card, if shown, fading out), the whole graph in view."""
        diagram = self.diagram
        boxes = [*diagram.values.values(), *diagram.ops.values()]
        edges = [*diagram.edges.values(), *diagram.loops.values()]
        card = [FadeOut(self.card)] if self.__dict__.get("card") is not None else []
        self.move_camera(self.whole, animate=False)
        self.play(*card, LaggedStart(*(FadeIn(box) for box in boxes), lag_ratio=0.05),
                  LaggedStart(*(Create(edge) for edge in edges), lag_ratio=0.05),
                  run_time=self.t(1.2))
        self.card = None
        # Re-add as one static layer: edges under boxes, as in the SVG.
        self.remove(*boxes, *edges)
        self.add(*edges, *boxes)
        self._tick()

    def rows_needed(self) -> int:
        """The caption band's rows: as many as the clip's tallest caption takes (its rule
        as pacing shows it), and at least two."""
        if not self.backward:
            return 2
        rows, seen = [caption_rows(self.captions[0].rule, caption_lines(
            self.graph, None, self.captions[0], self.precision), PAGE_ROWS)], set()
        for step in self.steps:
            pace = pace_of(self.graph, step, seen, last=step is self.steps[-1])
            caption = self.captions[step.index]
            rows.append(caption_rows(shown_rule(self.graph, step, caption, pace),
                                     caption_lines(self.graph, step, caption, self.precision),
                                     PAGE_ROWS))
        return max(2, *rows)

    def show_title_card(self) -> None:
        """The first frame: what the graph computes and what the clip finds (title_card),
        held to be read."""
        start = self.time
        self.move_camera(self.whole, animate=False)
        card, text = title_card(self.graph, self.store, self.palette, self.precision,
                                self.backward, self.title_lines())
        self.card = self.place(card, 0, 0)
        self.add(self.card)
        self.wait(frames_up(self.t(reading_time(text) + CARD_EXTRA), config.frame_rate))
        self.cue(text, start)

    def title_lines(self) -> list[str]:
        """Lines the title card says after what is computed (none here; a training clip
        says its passes)."""
        return []

    def show_recap(self) -> None:
        """The end: the graph gives way to the recap (recap_card): the gradients found,
        typeset, and the lessons this graph showed."""
        if not self.backward:
            self.wait(self.t(2.0))
            return
        self.clear_marks()
        shown = list(self.mobjects)
        self.title = self.caption = self.meter = None
        card, text, results = recap_card(self.graph, self.store, self.palette, self.results,
                                         self.precision, self.dead_values)
        self.place(card, 0, 0)
        start = self.time
        self.play(*(FadeOut(m) for m in shown), run_time=self.t(0.6))
        self.play(FadeIn(card, shift=0.1 * UP), run_time=self.t(0.6))
        self.caption = results
        self.caption_text = text
        self.recap = card
        self.wait(frames_up(max(self.t(0.3), self.t(reading_time(text) + CARD_EXTRA)
                                - (self.time - start)), config.frame_rate))
        self.cue(text, start)

    def set_note(self, text: str) -> None:
        """Queue a plain sentence for the caption band (in place of an equation)."""
        note = note_line(self.store, self.palette, text)
        self.place_rows(note, note[0])
        if self.caption is not None:
            self.remove(self.caption)
        self.caption = note
        self._queue(FadeIn(note, shift=0.1 * UP))

    def node_named(self, name: str) -> Any:
        """The id of the value the script calls ``name``."""
        for node, label in self.graph.nodes(data="label"):
            if label == name:
                return node
        raise AnimateError(f"the graph has no value named {name!r}")

    def _part(self, node: Any) -> VMobject:
        return self.diagram.values.get(node) or self.diagram.ops[node]

    def show_overview(self) -> None:
        """Zoom out to the whole graph (when it is larger than the frame), every gradient
        in it, before the recap."""
        if self.overview == 1:
            return
        self.clear_marks()
        overlay = [m for m in (self.title, self.caption, self.meter) if m is not None]
        self.play(*(FadeOut(m) for m in overlay), run_time=self.t(0.4))
        self.title = self.caption = self.meter = None
        self.move_camera(self.whole, seconds=1.2)
        self.wait(self.t(1.0))

    def results_text(self) -> str:
        """The overview's results in words, as its cue: "∂L/∂W1 = [...]", one a line."""
        return results_text(self.graph, self.results, self.precision)

    def result_table(self) -> VGroup | None:
        """The recap's results, "∂L/∂W1 = [...]" each, in screen units as ``place``
        takes them; None if the graph has no gradients to show."""
        return recap_card(self.graph, self.store, self.palette, self.results,
                          self.precision, self.dead_values)[2]

    def focus(self, nodes: Sequence[Any], seconds: float = 0.6) -> None:
        """Move the camera (with the title and caption) until ``nodes`` are in view: the
        view of whole columns that shows them (camera.py). A graph that fits its room
        never moves."""
        view = self.view_for(nodes)
        if view is not None:
            self.move_camera(view, seconds=seconds)

    def view_for(self, nodes: Sequence[Any]) -> View | None:
        """The view that shows ``nodes`` (focus's); None if the graph fits its room."""
        if self.overview == 1 and self.view is not None:
            return None
        parts = [self._part(node) for node in nodes]
        spans = [(p.get_left()[0], p.get_right()[0]) for p in parts]
        first = min(i for i, (low, high) in enumerate(self.columns)
                    if any(a < high and b > low for a, b in spans))
        last = max(i for i, (low, high) in enumerate(self.columns)
                   if any(a < high and b > low for a, b in spans))
        return view_of(self.columns, (first, last), self.heights, self.room,
                       config.frame_width, self.most_zoom, ZOOM_IN, self.view)

    def beat(self, op: Any, result: Any) -> list:
        """What one beat of the story shows: an op with its operands and its result; where
        those columns cannot be read at once (a wide tensor's table beside another), the
        op and its result, the camera following each share out to its operand (follow)."""
        around = self._around(op)
        view = self.view_for(around)
        return around if view is None or view.zoom <= self.most_zoom + 1e-9 else [op, result]

    def follow(self, nodes: Sequence[Any]) -> list:
        """The camera's moves to bring ``nodes`` in view, to play with a share's motion
        (none if they are in view)."""
        view = self.view_for(nodes)
        if view is None or view == self.view:
            return []
        note = self.__dict__.get("gate_note")
        kept = [note.animate.shift(within(note, view.x, view.zoom * config.frame_width))] \
            if note is not None and note in self.marks else []
        return [*self.camera_moves(view), *kept]

    def move_camera(self, view: View, *, seconds: float = 0.6, animate: bool = True) -> None:
        """Move the camera's frame to ``view``, the title, caption and meter keeping their
        places on screen; at once unless ``animate``."""
        if self.view is not None and view == self.view:
            return
        if animate:
            self.play(*self.camera_moves(view), run_time=self.t(seconds))
            return
        for mobject, (center, ratio) in self._overlay_moves(view).items():
            mobject.move_to(center).scale(ratio)
        self.camera.frame.set(width=view.zoom * config.frame_width).move_to([view.x, view.y, 0])
        self.view = view

    def camera_moves(self, view: View) -> list:
        """The animations that move the camera's frame to ``view``, the title, caption and
        meter keeping their places on screen (its view from then on)."""
        moves = [Moved(m, center, ratio) for m, (center, ratio)
                 in self._overlay_moves(view).items()]
        self.view = view
        return [self.camera.frame.animate.set(width=view.zoom * config.frame_width)
                .move_to([view.x, view.y, 0.0]), *moves]

    def _overlay_moves(self, view: View) -> dict:
        """Where the title, caption and meter go for ``view`` (centre, scale): in their
        places on screen."""
        frame = self.camera.frame
        old_zoom = frame.width / config.frame_width
        old_center = frame.get_center()
        center = np.array([view.x, view.y, 0.0])
        ratio = view.zoom / old_zoom
        return {m: (center + (m.get_center() - old_center) * ratio, ratio)
                for m in (self.title, self.caption, self.meter) if m is not None}

    def _around(self, op: Any) -> list:
        """An op with its operands and its result: what one beat of the story shows."""
        return [*self.graph.predecessors(op), op, *self.graph.successors(op)]

    def on_plate(self, words: VMobject) -> None:
        """Put a plate of the background's colour behind ``words`` placed in a band, so
        that a long edge that runs past the graph's room (the camera is only as high as
        the columns it shows) passes under them; none on a transparent theme."""
        if self.palette.text_fill is None:
            return
        zoom = self.camera.frame.width / config.frame_width
        words.add_to_back(BackgroundRectangle(words, color=self.palette.background,
                                              fill_opacity=1, stroke_width=0,
                                              buff=0.06 * zoom))
        words.set_z_index(Z_PULSE + 1)  # (over the graph's numbers and what moves on it)

    def place(self, mobject: VMobject, x: float, y: float) -> VMobject:
        """Put ``mobject`` at (x, y) of the screen, as if the camera had not moved:
        scaled with the camera's zoom and shifted with its pans."""
        frame = self.camera.frame
        zoom = frame.width / config.frame_width
        return mobject.scale(zoom).move_to(frame.get_center() + zoom * np.array([x, y, 0]))

    def show_values(self) -> None:
        """All forward values at once (for a clip of the backward pass only)."""
        self.data_labels = {node: value.data_label()
                            for node, value in self.diagram.values.items()}
        self.play(FadeIn(VGroup(*self.data_labels.values())), run_time=self.t(0.8))
        self._tick()

    def play_backward(self) -> None:
        """The seed at the root, then every op of ``backward_order``."""
        self.focus(list(self.graph.graph.get("seeds", {})))
        self.set_title("Backward pass: the chain rule, from the output back")
        if self.memory.forward:
            self.show_meter(self.memory.forward[-1])  # all the forward pass kept
        self.play_seed()
        for step in self.steps:
            self.play_step(step)

    def play_seed(self) -> None:
        """A 1 appears at each root, in blue: the derivative of the output by itself."""
        start = self.time
        self.pace = seed_pace()
        self.set_caption(0)
        seed_story(self, self.t(0.9), self._pending())
        self.hold(start)
        self.cue(self.caption_text, start)
        self._tick()

    def play_step(self, step: Any) -> None:
        """One op of the backward pass, paced by what it means (pacing.py): the op lit,
        then each share moving along its edges as the caption's terms appear (story.py)."""
        start = self.page_start = self.time  # (a paged caption's first page from here)
        self.timeline.append(("step", step.op, start))
        self.pace = pace_of(self.graph, step, self.rules_read,
                            last=bool(self.steps) and step is self.steps[-1])
        self.__dict__.setdefault("paces", {})[step.index] = self.pace  # (by step, for reading)
        self.clear_marks()
        closing = step.op is None  # (a rolled loop's closing step: story.closing_story)
        self.focus(list(step.updated) if closing else self.beat(step.op, step.result))
        self.set_caption(step.index, step)
        if closing:
            self.highlight_loop()
        else:
            self.highlight_op(step.op)
        self.play(*self._pending(), run_time=self.t(0.5) * self.pace.motion)
        if closing:
            closing_story(self, step, self.pace)
        else:
            self.loop_sums(step)
            self.send_gradients(step)
            finish_story(self, step)
            self.show_meter(self.memory.backward[self.steps_before(step)])
        self.hold(start)
        self.cue(self.shown_text(), self.page_start)
        self._tick()

    def steps_before(self, step: Any) -> int:
        """How many ops' steps come before ``step``'s (not a rolled loop's closing step)."""
        return sum(1 for done in self.steps[:step.index - 1] if done.op is not None)

    def loop_sums(self, step: Any) -> None:
        """A rolled loop's shared value that ``step``'s op made before the loop: its
        gradient as the step reads it, every repetition's share in (rolling.py)."""
        after = self.graph.graph.get("loop_after", {})
        for value in self.graph.successors(step.op):
            if value in after and value in self.grad_labels:
                old = self.grad_labels[value]
                new = self.diagram.values[value].grad_label(after[value],
                                                            self.dead_values.get(value))
                self.play(Becomes(old, new), self.mark_value(value, new),
                          run_time=self.t(0.5) * self.pace.motion)
                self.grad_labels[value] = new
                self.timeline.append(("gradient", value, self.time))

    def hold(self, start: float) -> None:
        """Wait until the words shown since ``start`` (and their notes) can be read
        (pacing.reading_time), and longer on a held beat, at the scene's speed; of a
        caption shown a page at a time, the last page since it was turned to."""
        text = self.shown_text()
        if text != "\n".join([self.caption_text, *self.cue_notes]):  # (a page of it)
            start = max(start, self.page_start)
        pace: Pace | None = self.__dict__.get("pace")  # (set by the seed and each step)
        needed = self.t(reading_time(text) + (pace.extra if pace is not None else 0.0))
        self.wait(frames_up(max(self.t(0.3), needed - (self.time - start)), config.frame_rate))

    def turn_page(self, key: Any) -> None:
        """Before the share of ``key`` plays: if its lines are on the caption's next page,
        wait until the page shown has been read, then clear it (StepCaption.turn)."""
        caption = self.caption
        if not isinstance(caption, StepCaption):
            return
        text = self.shown_text()
        read = self.t(reading_time(text)) - (self.time - self.page_start)
        clearing = caption.turn(key)
        if not clearing:
            return
        if read > 0:
            self.wait(frames_up(read, config.frame_rate))
        self.cue(text, self.page_start)  # (the page's own subtitle)
        self.play(*clearing, run_time=self.t(0.3))
        self.page_start = self.time

    def shown_text(self) -> str:
        """The words of the caption as shown, with the notes added since: of a caption
        shown a page at a time, its page."""
        caption = self.caption
        if isinstance(caption, StepCaption) and len(caption.pages) > 1:
            return "\n".join([caption.page_text(), *self.cue_notes])
        return "\n".join([self.caption_text, *self.cue_notes])

    def cue(self, text: str, start: float) -> None:
        """The subtitle of the beat since ``start``: ``text``, the words on screen (its
        names as the screen writes them: W₁, not W1)."""
        text = subscripted(text)
        self.cues.append((start, text))
        self.cue_notes = []
        self.add_subcaption(text, duration=self.time - start, offset=start - self.time)

    def send_gradients(self, step: Any) -> None:
        """Each share of the step in turn (story.share_story): the upstream gradient
        travels back to near the operand, meets the local derivative, and the product
        lands in the operand's slot, added to what is there at a fork; at a dead ReLU it
        stops at the gate. A constant's share is not shown, as in the pictures."""
        G = self.graph
        sending = [(u, v, k) for u, v, k in step.edges if G.edges[u, v, k].get("grad") is not None
                   and G.nodes[u].get("role") != "const"]
        stops = gate_stop(self, step, sending)
        if self.diagram.ops[step.op].dead and not stops:
            self.play(self._gate_note(self.diagram.ops[step.op]),
                      run_time=self.t(0.4) * self.pace.motion)
        for index, edge in enumerate(sending):
            share_story(self, step, edge, share_pace(self.pace, index), stop=edge in stops,
                        fork=self._is_fork(edge[0]))

    # ------------------------------------------------------------ pieces

    def set_title(self, text: str, key: bool = True) -> None:
        """The phase title, top left, muted, with (``key``) the key to the colours."""
        title = title_block(self.store, self.palette, text, key)
        self.place(title, -config.frame_width / 2 + SIDE_MARGIN + title.width / 2,
                   TITLE_Y - title.height / 2 + title[0].height / 2)
        self.on_plate(title)
        if self.title is not None:
            self.remove(self.title)
        self.title = title
        self.play(FadeIn(title, shift=0.15 * DOWN), run_time=self.t(0.4))

    def show_meter(self, step: MemoryStep) -> None:
        """With ``memory``, the meter under the title, right: the bytes kept for backward
        after ``step`` of the memory timeline, in words and as a bar against the peak;
        set at once (no beat added)."""
        peak = self.memory.peak_bytes
        if not peak or not self.show_memory:
            return
        meter = meter_block(self.store, self.palette, step.bytes_held, peak)
        self.place(meter, config.frame_width / 2 - SIDE_MARGIN - meter.width / 2,
                   TITLE_Y - ROW_PITCH)
        if self.meter is not None:
            self.remove(self.meter)
        self.meter = self.last_meter = meter
        self.meter_shown.append(step.bytes_held)
        self.add(meter)

    def set_caption(self, index: int, step: Any = None) -> None:
        """Queue the caption of backward step ``index`` (``step``, None for the seed): its
        rule as pacing shows it, then its worked lines, their terms hidden until the
        motion reaches them (story.py), in the caption band under the graph."""
        caption = self.captions[index]
        rule = caption.rule if step is None else shown_rule(self.graph, step, caption,
                                                           self.pace)
        self.queue_caption(step_caption(self.graph, step, caption, rule, self.store,
                                        self.palette, self.precision, PAGE_ROWS))

    def queue_caption(self, new: StepCaption) -> None:
        """Put ``new`` in the caption band in place of the caption shown, coming in with
        the next animations (its terms as hidden as it made them)."""
        self.place_rows(new, new.rows[0])
        self.on_plate(new)
        # The .srt cue is the caption's very lines, as shown.
        self.caption_text = new.text()
        if self.caption is not None:
            self.remove(self.caption)
        self.caption = new
        self._queue(FadeIn(new, shift=0.1 * UP))

    def place_rows(self, mobject: VMobject, first: VMobject) -> VMobject:
        """Put the rows of ``mobject`` in the caption band, centred, its ``first`` row at
        the band's top, as if the camera had not moved."""
        frame = self.camera.frame
        zoom = frame.width / config.frame_width
        mobject.scale(zoom)
        where = frame.get_center() + zoom * np.array(
            [0, caption_top(self.caption_rows) - ROW_PITCH / 2, 0])
        return mobject.shift(where - np.array([mobject.get_center()[0],
                                               first.get_center()[1], 0]))

    def highlight_op(self, op: Any) -> None:
        """Queue the highlight of the current op and of the edge its gradient came in by."""
        G, diagram, palette = self.graph, self.diagram, self.palette
        ring = ring_over(diagram.ops[op], palette.highlight_line, palette.highlight_fill)
        (result_edge,) = G.out_edges(op, keys=True)
        edge = diagram.edges[result_edge].copy().set_color(palette.highlight_line)
        edge.path.set_stroke(width=edge.path.get_stroke_width() * 1.8)
        self.marks.extend([edge.set_z_index(Z_MARK), ring.set_z_index(Z_MARK)])
        self._queue(FadeIn(edge), FadeIn(ring, scale=1.3))

    def highlight_loop(self) -> None:
        """Queue the highlight of a rolled loop's back edges: the repetitions not drawn
        send their shares round them (the closing step)."""
        for loop in self.diagram.loops.values():
            # (its dashes and head, not its count, which gives way to the shares' words)
            drawn = [loop.dashes, *([loop.head] if hasattr(loop, "head") else [])]
            lit = VGroup(*(part.copy() for part in drawn))
            lit.set_color(self.palette.highlight_line).set_z_index(Z_MARK)
            self.marks.append(lit)
            self._queue(FadeIn(lit))

    def mark_value(self, value: Any, label: VMobject) -> FadeIn:
        """The highlight behind a gradient this step changed (as in the SVG's step
        view); it must be played before the label is, to lie under it."""
        box = self.diagram.values[value]
        back = RoundedRectangle(corner_radius=0.15 * box.em, width=label.width + 0.35 * box.em,
                                height=label.height + 0.25 * box.em, stroke_width=0)
        back.set_fill(self.palette.highlight_fill, 1).move_to(box.grad_slot)
        self.marks.append(back.set_z_index(Z_MARK))
        return FadeIn(back)

    def edge_label(self, edge: tuple) -> Table:
        """The contribution sent along ``edge``, at the edge's label position."""
        if edge in self.edge_labels:
            return self.edge_labels[edge]
        diagram = self.diagram
        box = diagram.values[edge[0]]
        contribution = self.graph.edges[edge]["grad"]
        em = EXPRESSION_PT * diagram.scale_factor

        label = Table(format_array(contribution, self.precision, MAX_ITEMS), self.store, em,
                      self.palette.grad, bracketed=box.bracketed,
                      dead=self.dead_edges.get(edge), dead_color=self.palette.dead_text,
                      dead_fill=self.palette.dead_fill, backdrop=self.palette.label_fill)
        # Where the figure's badge sits on the route, else half way along the curve.
        where = diagram.layout.edges[edge].label
        label.move_to(diagram.point(*where) if where is not None
                      else diagram.edges[edge].path.point_from_proportion(0.5))
        self.edge_labels[edge] = label.set_z_index(Z_NUMBER)
        return label

    def clear_marks(self) -> None:
        """Take away the previous step's highlights (no animation: nothing moves)."""
        self.remove(*self.marks)
        self.marks = []

    def _is_fork(self, value: Any) -> bool:
        sent = [g for _, _, g in self.graph.out_edges(value, data="grad") if g is not None]
        return len(sent) >= 2

    def _pulse(self, path: VMobject, color: str, seconds: float,
               width: float = 1.6) -> AnimationGroup:
        return pulse(path, color, self.t(seconds), self.diagram.scale_factor, width)

    def _gate_note(self, op: OpNode) -> FadeIn:
        """Under a ReLU with some dead units: which units pass no gradient."""
        s = self.diagram.scale_factor
        boxes = [box.frame for box in self.diagram.values.values()]
        words, note = dead_unit_note(op, boxes, self.palette, self.store, s)
        # (inside the frame: wider than its op, at the frame's edge, it had run out of it)
        frame = self.camera.frame
        note.shift(within(note, frame.get_center()[0], frame.width))
        if any(overlap(note, box) for box in boxes):
            self.on_plate(note)  # (over the edge of a box it lies on then)
        self.gate_note = note  # (kept in the frame as the camera follows a share: follow)
        self.cue_notes.append(words)
        self.marks.append(note)
        return FadeIn(note, shift=2 * s * UP)

    # ------------------------------------------------------------ plumbing

    def _queue(self, *animations: Any) -> None:
        self.__dict__.setdefault("_queued", []).extend(animations)

    def _pending(self) -> list:
        queued = self.__dict__.get("_queued", [])
        self._queued = []
        return queued

    def _tick(self) -> None:
        """One more beat of the story done: update the progress line on stderr."""
        self._beats_done += 1
        if not self.progress:
            return
        total = max(self._beats_total, self._beats_done)
        filled = int(30 * self._beats_done / total)
        sys.stderr.write(f"\rrendering [{'#' * filled}{'.' * (30 - filled)}] "
                         f"{self._beats_done}/{total}")
        if self._beats_done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()
