"""The forward pass of a clip: inputs first, then op by op each result, its line worked in
the engine's numbers in the caption band (forward_lines), held to be read."""

from __future__ import annotations

from typing import Any

import networkx as nx
from manim import LaggedStart, config, rate_functions

from ..forward_lines import forward_lines
from .fades import FadeIn
from .mobjects import Z_MARK
from .motion import ring_over
from .pacing import forward_pace, frames_up, reading_time
from .screen import PAGE_ROWS
from .story import StepCaption, caption_rows, forward_terms

__all__ = ["FORWARD_PACE", "ForwardPass"]

# The forward pass's motion plays at FORWARD_PACE of the backward's times; each op's
# line is held until it can be read.
FORWARD_PACE = 0.6


class ForwardPass:
    """BackpropScene's forward pass (its graph, diagram, caption band and camera)."""

    def forward_lines_within(self, rows: int) -> dict[Any, list]:
        """Each forward op's caption lines (story.forward_terms): a line that would take
        more than ``rows`` rows of the band (the backward pass's) said more briefly
        (ForwardLine.shorter)."""
        found = {}
        for op, line in forward_lines(self.graph, self.precision).items():
            for said in (line, *line.shorter()):
                found[op] = forward_terms(said)
                if caption_rows("", found[op]) <= rows:
                    break
        return found

    def play_forward(self) -> None:
        """Inputs first; then, op by op as the script computed them, each result appears."""
        G, diagram = self.graph, self.diagram
        start = self.time
        leaves = [v for v in diagram.values if G.in_degree(v) == 0]
        self.data_labels.update({v: diagram.values[v].data_label() for v in leaves})
        self.play(LaggedStart(*(FadeIn(self.data_labels[v], scale=1.3) for v in leaves),
                              lag_ratio=0.15),
                  run_time=self.t(0.9))
        self._tick()
        ops = self.forward_order()
        if ops:
            self.focus(self.beat(ops[0], next(iter(G.successors(ops[0])))))
        header = "Forward pass: compute and store each value"
        self.set_title(header)
        read = self.t(reading_time(header)) - (self.time - start)  # (its cue, read first)
        if read > 0:
            self.wait(frames_up(read, config.frame_rate))
        self.cue(header, start)
        kept = {step.op: step for step in self.memory.forward}
        for op in ops:
            self.focus(self.beat(op, next(iter(G.successors(op)))))
            self.forward_op(op)
            self.show_meter(kept[op])

    def forward_order(self) -> list:
        """The ops in the order the forward pass is played: as the script computed them
        (the order the IR recorded them in), each after its operands."""
        G = self.graph
        made = {node: index for index, node in enumerate(G)}
        return [node for node in nx.lexicographical_topological_sort(G, key=made.__getitem__)
                if G.nodes[node]["kind"] == "op"]

    def forward_op(self, op: Any) -> None:
        """Values travel into ``op`` as its equation appears in the caption band, it pulses
        as their numbers are put in, and its result appears in black with the number the
        engine computed (forward_lines); the whole line then held until it can be read."""
        G, diagram, palette = self.graph, self.diagram, self.palette
        start = self.time
        incoming = [diagram.edges[e] for e in G.in_edges(op, keys=True)]
        (result_edge,) = G.out_edges(op, keys=True)
        result = result_edge[1]
        pace = FORWARD_PACE * forward_pace(G.nodes[op]["op"],
                                           self.__dict__.setdefault("forward_seen", set()))
        caption = self.set_forward_caption(op)
        dots = [self._pulse(edge.forward_path(), palette.text, 0.7 * pace) for edge in incoming]
        ring = ring_over(diagram.ops[op], palette.text, palette.op_fill).set_z_index(Z_MARK)
        label = self.data_labels[result] = diagram.values[result].data_label()
        self.play(*self._pending(), *dots, *caption.reveal("forward", "travel"),
                  run_time=self.t(0.7 * pace))
        self.play(FadeIn(ring, scale=1.25, rate_func=rate_functions.there_and_back),
                  *caption.reveal("forward", "meet"), run_time=self.t(0.35 * pace))
        self.remove(ring)
        self.play(self._pulse(diagram.edges[result_edge].forward_path(), palette.text,
                              0.35 * pace), run_time=self.t(0.35 * pace))
        self.play(FadeIn(label, scale=1.3), *caption.reveal("forward", "land"),
                  run_time=self.t(0.4 * pace))
        self.hold(self.time)  # (the whole line, once it is all there)
        self.cue(self.caption_text, start)
        self._tick()

    def set_forward_caption(self, op: Any) -> StepCaption:
        """Queue the caption of forward ``op``: its line, its terms hidden until the
        motion reaches them, in the caption band under the graph."""
        new = StepCaption(self.store, self.palette, "", self.forward_captions[op], PAGE_ROWS)
        self.queue_caption(new)
        return new

