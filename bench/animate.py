"""Benchmark the video render: seconds of rendering per second of clip, against bare manim.

Run with ``.venv/bin/python bench/animate.py`` (``--quality l h``, ``--graph mlp
scalar``). For each graph and quality it times ``render_video`` (the whole
clip: forward pass, backward sweep, camera moves) and a bare manim scene that
builds the same mobjects with the same builders and plays the same kinds of
animations for the same durations, written straight against manim (no
timeline, no captions bookkeeping, no progress): the limit. The target is a
ratio of at most 1.1, ours in one process (``-j 1``) as bare manim is. Both
write an mp4 with caching off, in a scratch folder. Then the same clip
rendered by two processes (``-j 2``, the default on two cores) against one:
the wall time, target at most 0.6. One process already keeps more than a core
busy (its encoders run in threads beside the drawing), so two cores cannot
bring the wall time below its CPU time halved: the column "-j1 cores" is how
many cores ``-j 1`` kept busy, and "best" that bound (its CPU seconds over two,
against its wall time). Each of these starts with no text kept on disk
(animate/kept_texts.py); the last column is the clip rendered again, its texts
read back from the first render's.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import av
import manim
import networkx as nx
import numpy as np
from manim import (
    AnimationGroup,
    Circle,
    Create,
    Dot,
    FadeIn,
    FadeOut,
    LaggedStart,
    MoveAlongPath,
    MovingCameraScene,
    RoundedRectangle,
    ShowPassingFlash,
    Succession,
    VGroup,
    rate_functions,
)

from backpropviz.animate import render_video
from backpropviz.animate.forward import FORWARD_PACE
from backpropviz.animate.mobjects import GraphMobject, Table, TextStore, pen_width
from backpropviz.animate.pacing import reading_time
from backpropviz.animate.render import encoder_options
from backpropviz.animate.screen import CAPTION_EM, RESULT_EM, parameter_results, wrapped_words
from backpropviz.animate.sweep import MIN_SCALE
from backpropviz.captions import step_captions
from backpropviz.formatting import format_array
from backpropviz.forward_lines import forward_lines
from backpropviz.layout import layout
from backpropviz.script import graph_of_script
from backpropviz.steps import backward_steps, gradient_history
from backpropviz.style import THEMES

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = {
    "mlp": ("d2l_mlp.py", "L"),  # the book's MLP, matrix form: 19 nodes
    "scalar": ("d2l_mlp_scalar.py", "L"),  # the same, one Value per number: 38 nodes
}
QUALITIES = {"l": "low_quality", "h": "high_quality"}
# The bare sweep's room for the graph, and its margin when it pans (scene units).
GRAPH_CENTER = (0.0, 0.4, 0.0)
GRAPH_WIDTH, GRAPH_HEIGHT = 13.4, 5.0
PAN_MARGIN = 0.6


class BareSweep(MovingCameraScene):
    """The same mobjects and animations as the clip, played with plain manim calls."""

    def __init__(self, G: nx.MultiDiGraph, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.G = G

    def construct(self) -> None:
        G, palette, store = self.G, THEMES["light"], TextStore()
        self.camera.background_color = palette.background
        steps, captions, results = backward_steps(G), step_captions(G), parameter_results(G)
        store.typeset([(c.tex, c.text) for c in captions] + [(t, u) for _, t, u in results],
                      CAPTION_EM, palette.text)
        diagram = GraphMobject(G, layout(G, legend=False), palette, store, center=GRAPH_CENTER,
                          max_width=GRAPH_WIDTH, max_height=GRAPH_HEIGHT, min_scale=MIN_SCALE,
                          grads=gradient_history(G))
        s = diagram.scale_factor
        frame = self.camera.frame
        width = manim.config.frame_width
        zoom = max(1.0, (diagram.width + 2 * PAN_MARGIN) / width)
        center = np.array(GRAPH_CENTER)
        if zoom > 1:
            frame.scale(zoom, about_point=center)

        def pulse(path, color):
            dot = Dot(path.get_start(), radius=3.2 * s, color=color)
            flash = path.copy().set_stroke(color, width=pen_width(2.6, s))
            return AnimationGroup(MoveAlongPath(dot, path, remover=True),
                                  ShowPassingFlash(flash, time_width=0.6))

        def ring(op, color):
            circle = Circle(radius=op.circle.radius, color=color).move_to(op.circle)
            return VGroup(circle.set_fill(palette.highlight_fill, 1), op.symbol.copy())

        def pan(nodes, overlay):
            parts = [diagram.values.get(n) or diagram.ops[n] for n in nodes]
            left = min(p.get_left()[0] for p in parts) - PAN_MARGIN
            right = max(p.get_right()[0] for p in parts) + PAN_MARGIN
            if zoom == 1 or (left >= frame.get_x() - width / 2
                             and right <= frame.get_x() + width / 2):
                return
            x = left + width / 2 if left > frame.get_x() else right - width / 2
            shift = np.array([x - frame.get_x(), 0, 0])
            self.play(frame.animate.shift(shift), *(m.animate.shift(shift) for m in overlay),
                      run_time=0.6)

        boxes = [*diagram.values.values(), *diagram.ops.values()]
        self.play(LaggedStart(*(FadeIn(b) for b in boxes), lag_ratio=0.05),
                  LaggedStart(*(Create(e) for e in diagram.edges.values()), lag_ratio=0.05),
                  run_time=1.2)
        leaves = [v for v in diagram.values if G.in_degree(v) == 0]
        self.play(LaggedStart(*(FadeIn(diagram.values[v].data_label()) for v in leaves),
                              lag_ratio=0.15), run_time=0.9)
        if zoom > 1:
            frame.generate_target()
            self.play(frame.animate.scale(1 / zoom, about_point=center)
                      .set_x(diagram.get_left()[0] - PAN_MARGIN + width / 2), run_time=1.2)
        title = store.text("Forward pass", 0.3, palette.muted).move_to(frame).shift(3.5 * manim.UP)
        self.play(FadeIn(title), run_time=0.4)
        lines = forward_lines(G)
        for op in (n for n in nx.topological_sort(G) if G.nodes[n]["kind"] == "op"):
            pan([*G.predecessors(op), op, *G.successors(op)], [title])
            (result_edge,) = G.out_edges(op, keys=True)
            # (its line in the band, in as many rows as ours, held as long as ours)
            line = VGroup(*(store.text(row, CAPTION_EM, palette.text) for row in
                            wrapped_words(lines[op].text, CAPTION_EM)))
            line.arrange(manim.DOWN).move_to(frame).shift(3.0 * manim.DOWN)
            self.play(Succession(
                FadeIn(line, run_time=0.01),
                AnimationGroup(*(pulse(diagram.edges[e].forward_path(), palette.text)
                                 for e in G.in_edges(op, keys=True)), run_time=0.7),
                FadeIn(ring(diagram.ops[op], palette.text), remover=True, run_time=0.35,
                       rate_func=rate_functions.there_and_back),
                AnimationGroup(pulse(diagram.edges[result_edge].forward_path(), palette.text),
                               run_time=0.35),
                FadeIn(diagram.values[result_edge[1]].data_label(), run_time=0.4)))
            self.wait(max(0.3, reading_time(lines[op].text) - 1.8 * FORWARD_PACE))
            self.remove(line)
        self.remove(title)
        pan(list(G.graph["seeds"]), [])
        title = store.text("Backward pass", 0.3, palette.muted).move_to(frame)
        self.play(FadeIn(title.shift(3.5 * manim.UP)), run_time=0.4)
        caption = store.math(captions[0].tex, captions[0].text, CAPTION_EM, palette.text)
        caption.move_to(frame).shift(3.3 * manim.DOWN)
        seeds = [diagram.values[v].grad_label(g) for v, g in G.graph["seeds"].items()]
        self.play(FadeIn(caption), *(FadeIn(label) for label in seeds), run_time=0.9)
        self.wait(0.6)
        marks: list = []
        for step in steps:
            self.remove(*marks)
            pan([*G.predecessors(step.op), step.op, *G.successors(step.op)], [caption, title])
            self.remove(caption)
            caption = VGroup(store.math(captions[step.index].tex, captions[step.index].text,
                                        CAPTION_EM, palette.text),
                             store.text(captions[step.index].rule, 0.3, palette.muted))
            caption.arrange(manim.UP).move_to(frame).shift(3.0 * manim.DOWN)
            (result_edge,) = G.out_edges(step.op, keys=True)
            marks = [ring(diagram.ops[step.op], palette.highlight_line),
                     diagram.edges[result_edge].copy().set_color(palette.highlight_line)]
            self.play(FadeIn(caption), *(FadeIn(mark) for mark in marks), run_time=0.6)
            sending = [e for e in step.edges if G.edges[e].get("grad") is not None]
            if sending:
                self.play(*(pulse(diagram.edges[e].backward_path(), palette.grad)
                            for e in sending), run_time=0.9)
            labels = [diagram.values[u].grad_label(step.grads[u]) for u in step.updated]
            backs = [RoundedRectangle(width=label.width, height=label.height,
                                      corner_radius=0.02, stroke_width=0)
                     .set_fill(palette.highlight_fill, 1).move_to(label) for label in labels]
            marks.extend(backs)
            if labels:
                self.play(*(FadeIn(b) for b in backs), *(FadeIn(label) for label in labels),
                          run_time=0.6)
            self.wait(0.5)
        self.remove(*marks)
        if zoom > 1:
            self.play(FadeOut(caption), run_time=0.4)
            self.play(frame.animate.move_to([0, 0, 0]).scale(zoom, about_point=center),
                      run_time=1.2)
            row = VGroup(*(VGroup(store.math(tex, text, CAPTION_EM, palette.text),
                                  Table(format_array(G.nodes[v]["grad"]), store, RESULT_EM,
                                        palette.grad, bracketed=bool(G.nodes[v]["shape"])))
                           .arrange(manim.RIGHT) for v, tex, text in results))
            row.arrange(manim.RIGHT, buff=0.8).scale(zoom).move_to(frame).shift(2.5 * manim.DOWN)
            self.play(FadeIn(row), run_time=0.6)
        self.wait(2.0)


def time_bare(G: nx.MultiDiGraph, quality: str, folder: str) -> tuple[float, float]:
    """Seconds to render the bare scene to an mp4, and the clip's length."""
    settings = {"quality": QUALITIES[quality], "format": "mp4", "media_dir": folder,
                "output_file": "bare", "disable_caching": True, "progress_bar": "none",
                "verbosity": "WARNING", "max_inflight_encoders": 4,
                # the clip's own encoder settings (x264's preset among them), so that
                # the two differ in what is drawn only
                "video_encoder_options": encoder_options(".mp4")}
    start = time.perf_counter()
    with manim.tempconfig(settings):
        scene = BareSweep(G)
        scene.render()
        length = float(scene.time)
    return time.perf_counter() - start, length


def time_ours(G: nx.MultiDiGraph, quality: str, folder: str,
              jobs: int = 1) -> tuple[float, float]:
    """Seconds for render_video to write the clip with ``jobs`` processes, and the
    clip's length."""
    out = Path(folder) / "ours.mp4"
    start = time.perf_counter()
    render_video(G, out, quality=quality, progress=False, jobs=jobs)
    elapsed = time.perf_counter() - start
    with av.open(str(out)) as movie:  # the clip's own length, not a message about it
        length = movie.duration / av.time_base
    return elapsed, length


def cpu_seconds() -> float:
    """The CPU seconds of this process (all its threads) and its children, so far."""
    return sum(usage.ru_utime + usage.ru_stime for usage in
               (resource.getrusage(resource.RUSAGE_SELF),
                resource.getrusage(resource.RUSAGE_CHILDREN)))


def measure(which: str, name: str, quality: str,
            kept: str | None = None) -> tuple[float, float, float]:
    """Run one measurement in a fresh interpreter (no font, LaTeX or import cache
    carried over from the other one), the texts kept on disk in ``kept`` (a new
    folder when None: none kept from before, as bare manim's); its seconds, the
    clip's length and the CPU seconds of the render (every process and thread)."""
    with tempfile.TemporaryDirectory() as fresh:
        env = {**os.environ, "BACKPROPVIZ_CACHE": kept or fresh}
        done = subprocess.run([sys.executable, __file__, "--run", which, name, quality],
                              capture_output=True, text=True, check=True, env=env)
    elapsed, length, cpu = done.stdout.split()
    return float(elapsed), float(length), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quality", nargs="+", choices=list(QUALITIES), default=["l", "h"])
    parser.add_argument("--graph", nargs="+", choices=list(GRAPHS), default=list(GRAPHS))
    parser.add_argument("--run", nargs=3, metavar=("WHICH", "GRAPH", "QUALITY"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        which, name, quality = args.run
        script, root = GRAPHS[name]
        G = graph_of_script(ROOT / "examples" / script, [root], quiet=True)
        before = cpu_seconds()
        with tempfile.TemporaryDirectory() as folder:
            if which == "bare":
                elapsed, length = time_bare(G, quality, folder)
            else:  # ours, ours-j2
                elapsed, length = time_ours(G, quality, folder, 2 if which.endswith("2") else 1)
        print(f"{elapsed} {length} {cpu_seconds() - before}")
        return
    print(f"{'graph':8} {'quality':8} {'clip s':>7} {'ours s':>8} {'bare s':>8} "
          f"{'ours s/s':>9} {'bare s/s':>9} {'ratio':>6} {'-j 2 s':>7} {'-j2/-j1':>8} "
          f"{'-j1 cores':>9} {'best':>5} {'again s':>8}")
    for name in args.graph:
        for quality in args.quality:
            ours, length, cpu = measure("ours", name, quality)
            bare, bare_length, _ = measure("bare", name, quality)
            shared, _, _ = measure("ours-j2", name, quality)
            with tempfile.TemporaryDirectory() as kept:  # a clip rendered again
                measure("ours", name, quality, kept)
                again, _, _ = measure("ours", name, quality, kept)
            label = "480p15" if quality == "l" else "1080p60"
            print(f"{name:8} {label:8} {length:7.1f} {ours:8.1f} {bare:8.1f} "
                  f"{ours / length:9.2f} {bare / bare_length:9.2f} "
                  f"{(ours / length) / (bare / bare_length):6.2f} {shared:7.1f} "
                  f"{shared / ours:8.2f} {cpu / ours:9.2f} {max(0.5, cpu / 2 / ours):5.2f} "
                  f"{again:8.1f}", flush=True)


if __name__ == "__main__":
    main()
