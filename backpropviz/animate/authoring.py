"""What a scene written by hand adds to the backward sweep (scenes/): outline values with a
note, and trace the paths from a value to the output, one after the other."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import networkx as nx
from manim import Create, LaggedStart, SurroundingRectangle

from ..names import value_names
from .mobjects import Z_BADGE, Z_MARK

__all__ = ["Authoring"]


class Authoring:
    """BackpropScene's helpers for a scene of one's own (its camera, notes and marks)."""

    def point_out(self, nodes: Sequence[Any], note: str, seconds: float = 2.5) -> None:
        """Outline ``nodes`` and show ``note`` in the caption line, then hold."""
        self.clear_marks()
        self.focus(nodes)
        palette = self.palette
        outlines = [SurroundingRectangle(self._part(node), color=palette.highlight_line,
                                         buff=0.08, corner_radius=0.08,
                                         stroke_width=4).set_z_index(Z_BADGE)
                    for node in nodes]
        self.set_note(note)
        self.marks.extend(outlines)
        self.play(*(Create(outline) for outline in outlines), *self._pending(),
                  run_time=self.t(0.8))
        self.wait(self.t(seconds))

    def trace_paths(self, source: Any, target: Any | None = None) -> None:
        """Draw, one after the other, every path from ``source`` to ``target`` (the
        first root by default): the ways a value reaches the output, along which
        its gradient comes back."""
        G = self.graph
        target = G.graph["roots"][0] if target is None else target
        names = value_names(G)
        paths = list(nx.all_simple_paths(G, source, target))
        for number, path in enumerate(paths, start=1):
            values = [node for node in path if G.nodes[node]["kind"] == "value"]
            way = " ← ".join(names[node].text for node in reversed(values))
            self.clear_marks()
            self.set_note(f"path {number} of {len(paths)}:  {way}")
            edges = [self.diagram.edges[(u, v, k)] for u, v in itertools.pairwise(path)
                     for k in G[u][v]]
            traced = [edge.copy().set_color(self.palette.highlight_line) for edge in edges]
            for edge in traced:
                edge.path.set_stroke(width=edge.path.get_stroke_width() * 2.2)
                edge.set_z_index(Z_MARK)
            self.marks.extend(traced)
            self.play(*self._pending(), run_time=self.t(0.4))
            self.play(LaggedStart(*(Create(edge) for edge in traced), lag_ratio=0.6),
                      run_time=self.t(0.4 * len(traced) + 0.4))
            self.wait(self.t(1.0))
        self.clear_marks()
