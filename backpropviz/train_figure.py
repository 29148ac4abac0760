"""The figure of a training run: its loss per iteration and each parameter's value, on one slide.

Drawn as plain SVG, as the memory charts are (memory_chart.py: its SVG writer,
its conversion to PNG and PDF), so that it takes the figures' themes and
fonts, comes out byte-identical on every run, and each point is an element a
test can read. A parameter's panel shows the value each kept pass used, and
after the last one the value the update left for the next pass (a hollow
point). A vector or matrix parameter of a few entries is drawn as one thin
line per entry; a larger one as its norm, which is named so.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import DrawError
from .formatting import display_number
from .memory import timeline
from .memory_chart import (
    Panel,
    Series,
    Svg,
    growth_svg,
    mix,
    render_chart,
    timeline_svg,
    x_ticks,
)
from .metrics import text_width
from .options import Options
from .style import THEMES
from .training import Run

__all__ = ["ENTRY_LINES", "Curve", "curve_panel", "line_span", "loss_curve", "nice_ticks",
           "parameter_curves", "peak_svg", "render_training_figure", "render_training_memory",
           "require_passes", "training_svg", "value_ticks"]

# Sizes in SVG pixels of the 1920×1080 frame: every number at least 28 px.
TITLE_PX, SUBTITLE_PX, PANEL_PX, TICK_PX, LABEL_PX = 44, 30, 32, 28, 30
# A parameter of at most this many entries is drawn entry by entry, a larger one as its norm.
ENTRY_LINES = 12
# The most parameter panels one slide holds with numbers this large.
MAX_PANELS = 6


@dataclass(frozen=True)
class Curve:
    """One panel's lines over the iterations: ``xs`` (the passes' indices), ``lines`` (one
    list of y per line, as long as ``xs``), and ``what`` the lines are ("", "entries",
    "norm"). ``after`` is the value the last update left, one per line, drawn at the next
    index; None for the loss, which has no after."""

    name: str
    xs: Sequence[int]
    lines: Sequence[Sequence[float]]
    what: str = ""
    after: Sequence[float] | None = None


def _entries(data: object) -> np.ndarray:
    return np.asarray(data, dtype=np.float64).reshape(-1)


def parameter_curves(run: Run) -> list[Curve]:
    """Each parameter's values across the run (by the first iteration's order): as used by
    each kept pass, then as the last update left it."""
    if not run.iterations:
        return []
    xs = [iteration.index for iteration in run.iterations]
    curves = []
    for name in run.iterations[0].parameters:
        used = [_entries(iteration.parameters[name].before) for iteration in run.iterations]
        left = _entries(run.iterations[-1].parameters[name].after)
        if used[0].size == 1 and np.ndim(run.iterations[0].parameters[name].before) == 0:
            what = ""
        elif used[0].size <= ENTRY_LINES:
            what = "entries"
        else:
            what = "norm"
            used = [np.array([np.linalg.norm(values)]) for values in used]
            left = np.array([np.linalg.norm(left)])
        lines = [[float(values[k]) for values in used] for k in range(used[0].size)]
        curves.append(Curve(name, xs, lines, what, [float(x) for x in left]))
    return curves


def require_passes(run: Run) -> None:
    """DrawError unless the run kept at least one backward pass (there is nothing to draw)."""
    if not run.iterations:
        raise DrawError("the training run kept no backward pass, so there is nothing to draw; "
                        "call backward() in the loop, or ask for more iterations")


def loss_curve(run: Run) -> Curve:
    """The loss of each kept pass."""
    return Curve("loss", [it.index for it in run.iterations],
                 [[float(it.loss) for it in run.iterations]])


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round ticks from at most ``low`` to at least ``high``, about ``count`` of them."""
    if not high > low:
        pad = abs(low) * 0.1 or 1.0
        low, high = low - pad, high + pad
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    return [k * step for k in range(first, last + 1)]


def value_ticks(curve: Curve, from_zero: bool = False) -> list[float]:
    """The round ticks of a panel's value axis (nice_ticks) over every number of
    ``curve``: from 0 ``from_zero`` (the loss), else with the line kept off the axes, so
    that there is room for the numbers written at its ends."""
    values = [y for line in curve.lines for y in line] + list(curve.after or ())
    low, high = min(values), max(values)
    pad = 0.0 if from_zero else 0.15 * (high - low)
    return nice_ticks(min(low, 0.0) if from_zero else low - pad, high + pad)


def curve_panel(svg: Svg, box: tuple[float, float, float, float], curve: Curve, *,
                x_max: int, precision: int, sizes: tuple[float, float, float] = (
                    PANEL_PX, TICK_PX, LABEL_PX), from_zero: bool = False,
                point_class: str = "point") -> None:
    """One panel into ``svg``: ``curve``'s title above ``box`` (left, top, right, bottom),
    its value axis with round ticks, the iterations along the bottom up to ``x_max``, each
    line with a point per pass (``data-iteration``, ``data-value``: the number drawn), and,
    for a single line, its first and last values written beside their points."""
    t = svg.theme
    title_px, tick_px, label_px = sizes
    left, top, right, bottom = box
    ticks = value_ticks(curve, from_zero)
    span = ticks[-1] - ticks[0]

    def at(x: float, y: float) -> tuple[float, float]:
        return (left + (right - left) * x / x_max,
                bottom - (bottom - top) * (y - ticks[0]) / span)

    heading = {"": curve.name, "entries": f"{curve.name}, each entry",
               "norm": f"‖{curve.name}‖ (its norm)"}[curve.what]
    # The title sits above room for a number written over the panel's top point.
    loss = curve.name == "loss"
    room = right + 30 - left  # (a long name set smaller, not cut at the slide's edge)
    wide = text_width(heading, title_px, "sans" if loss else "serif")
    title_px = title_px * min(1.0, room / wide) if wide else title_px
    if loss:
        svg.text(left, top - label_px - title_px * 0.7, heading, title_px, t.text, bold=True,
                 extra=' class="panel-title"')
    else:  # a parameter's name typeset as in its figure (W₁)
        svg.name(left, top - label_px - title_px * 0.7, heading, title_px, t.text,
                 extra=' class="panel-title"')
    for tick in ticks:
        _, y = at(0, tick)
        svg.line(left, y, right, y, mix(t.muted, t.backdrop, 0.75), 1)
        svg.text(left - 12, y + tick_px * 0.35, display_number(tick, precision), tick_px,
                 t.muted, anchor="end", extra=f' class="tick-y" data-y="{y:.2f}"')
    svg.line(left, bottom, right, bottom, t.text, 2)
    for x in x_ticks(x_max):
        px, _ = at(x, ticks[0])
        svg.line(px, bottom, px, bottom + 8, t.text, 2)
        svg.text(px, bottom + tick_px + 8, f"{x:g}", tick_px, t.text, anchor="middle",
                 extra=' class="tick-x"')
    single = len(curve.lines) == 1
    color = t.text if single else mix(t.text, t.backdrop, 0.35)
    pen = 4 if single else 2
    for number, line in enumerate(curve.lines):
        points = [at(x, y) for x, y in zip(curve.xs, line, strict=True)]
        ends = points + ([at(curve.xs[-1] + 1, curve.after[number])] if curve.after else [])
        svg.add(f'<polyline class="line" points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in ends)}"'
                f' fill="none" stroke="{color}" stroke-width="{pen}"/>')
        for (px, py), x, y in zip(points, curve.xs, line, strict=True):
            svg.add(f'<circle class="{point_class}" id="{point_class}-{x}" cx="{px:.1f}" '
                    f'cy="{py:.1f}" r="{pen + 3}" fill="{color}" data-iteration="{x}" '
                    f'data-value="{y!r}"><title>pass {x}: {display_number(y, precision)}'
                    f'</title></circle>')
        if curve.after:
            px, py = ends[-1]
            left_for_next = display_number(curve.after[number], precision)
            svg.add(f'<circle class="{point_class} after" cx="{px:.1f}" cy="{py:.1f}" '
                    f'r="{pen + 3}" fill="{t.backdrop}" stroke="{color}" stroke-width="2" '
                    f'data-iteration="{curve.xs[-1] + 1}" data-value="{curve.after[number]!r}">'
                    f'<title>after the last update: {left_for_next}</title></circle>')
        if single:
            _end_labels(svg, ends, [*line, *(curve.after or ())], label_px, precision,
                        (left, right), (top, bottom))


def _end_labels(svg: Svg, points: list[tuple[float, float]], values: list[float], px: float,
                precision: int, edges: tuple[float, float],
                rows: tuple[float, float]) -> None:
    """The first and the last value of a line, written beside their points, within the
    panel's ``rows`` (top, bottom): never over the iterations along its axis."""
    t = svg.theme
    (x0, y0), (x1, y1) = points[0], points[-1]
    # Each number on the side away from the line where it meets it (the segment beside
    # it, not the line as a whole: a line that falls and then rises again to its end has
    # its last number over the end, not under it, beside the point before): over the
    # start of a fall and under its end, under the start of a rise and over its end;
    # over it where under would reach the axis.
    first_falls = len(points) > 1 and y0 < points[1][1]
    last_falls = len(points) > 1 and points[-2][1] < y1
    above, below = -14, px + 12

    def baseline(y: float, under: bool, left: float, right: float) -> float:
        """Under or over the point, and clear of the line across the number's width (a
        line that rises steeply from a number written over its start would cross it)."""
        top, bottom = line_span(points, left, right)  # (SVG's y runs down)
        if under and y + below <= rows[1] - 6:
            return max(y + below, bottom + 6 + 0.8 * px)
        return min(y + above, top - 6)

    first, last = (display_number(values[i], precision) for i in (0, -1))
    x = max(x0, edges[0] + 4)
    svg.text(x, baseline(y0, not first_falls, x, x + _bold_width(first, px)), first, px,
             t.text, bold=True, extra=' class="value-label" data-which="first"')
    if len(points) > 1:
        x = min(x1, edges[1] - 4)
        svg.text(x, baseline(y1, last_falls, x - _bold_width(last, px), x), last, px, t.text,
                 anchor="end", bold=True, extra=' class="value-label" data-which="last"')


def _bold_width(text: str, px: float) -> float:
    """About how wide ``text`` sets in bold at ``px`` (a bold face runs some 6 % wider)."""
    return 1.06 * text_width(text, px)


def line_span(points: Sequence[Sequence[float]], left: float,
              right: float) -> tuple[float, float]:
    """The least and the greatest height (y) the line through ``points`` (each x, y first,
    left to right) runs at between ``left`` and ``right``: at its points there, or where it
    crosses either end; (inf, -inf) if it runs nowhere there."""
    ys = [point[1] for point in points if left <= point[0] <= right]
    for (xa, ya, *_), (xb, yb, *_) in itertools.pairwise(points):
        ys.extend(ya + (yb - ya) * (x - xa) / (xb - xa) for x in (left, right) if xa < x < xb)
    return (min(ys), max(ys)) if ys else (math.inf, -math.inf)


def _subtitle(run: Run) -> str:
    rates = {update.rate for it in run.iterations for update in it.parameters.values()}
    kept = len(run.iterations)
    first, last = run.iterations[0].index, run.iterations[-1].index
    every = f", every {run.every}th" if run.every > 1 else ""
    words = f"{kept} pass{'es' if kept != 1 else ''} ({first}–{last}{every})"
    if len(rates) == 1 and None not in rates:
        return f"{words}; plain SGD, η = {display_number(rates.pop())}"
    return f"{words}; each update as the script made it (values before and after)"


def training_svg(run: Run, *, theme: str = "light", precision: int = 4) -> str:
    """The run on a 1920×1080 slide: its loss on the left, each parameter in a small
    panel on the right (all on one iteration axis); the hollow points are the values the
    last update left for the next pass."""
    require_passes(run)
    t = THEMES[theme]
    svg = Svg(t)
    curves = parameter_curves(run)
    x_max = max(1, run.iterations[-1].index + 1)
    svg.text(60, 70, "Training: the loss and the parameters, pass by pass", TITLE_PX, t.text,
             bold=True)
    shown = curves[:MAX_PANELS]
    left_out = len(curves) - len(shown)
    subtitle = _subtitle(run) + (f"; {left_out} more parameters not drawn" if left_out else "")
    svg.text(60, 120, subtitle, SUBTITLE_PX, t.muted)
    curve_panel(svg, (190, 260, 880, 930), loss_curve(run), x_max=x_max,
                precision=precision, from_zero=True)
    svg.text(535, 1040, "iteration", TICK_PX, t.muted, anchor="middle")
    if not shown:
        return svg.done()
    columns = 1 if len(shown) == 1 else 2
    rows = math.ceil(len(shown) / columns)
    width, height = 880 / columns, 820 / rows
    for number, curve in enumerate(shown):
        row, column = divmod(number, columns)
        x0, y0 = 1040 + column * width, 180 + row * height
        curve_panel(svg, (x0 + 130, y0 + 80, x0 + width - 40, y0 + height - 70), curve,
                    x_max=x_max, precision=precision)
    return svg.done()


def render_training_figure(run: Run, path: str | os.PathLike, options: Options) -> Path:
    """Write the run's figure to ``path`` (.svg, .png or .pdf), whole or not at all."""
    return render_chart(training_svg(run, theme=options.theme, precision=options.precision),
                        path)


# ---------------------------------------------------------------- memory across the loop


def peak_svg(run: Run, *, theme: str = "light") -> str:
    """The bytes kept for backward at each pass's peak, one point a pass, on a 1920×1080
    slide (memory_chart's growth chart): a flat line for a loop of a fixed batch."""
    require_passes(run)
    xs = [iteration.index for iteration in run.iterations]
    if max(xs) == 0:
        raise DrawError("a line of peaks needs two passes or more; this run kept one, "
                        "whose memory chart is drawn with --iteration 0")
    peaks = [timeline(iteration.graph).peak_bytes for iteration in run.iterations]
    flat = len(set(peaks)) == 1
    return growth_svg([Panel("kept for backward at the peak of each pass", "pass", xs,
                             [Series("peak", peaks)])],
                      title="Memory across the training loop",
                      subtitle="the same at every pass: the same graph, the same batch" if flat
                      else "it changes from pass to pass, as the pass's graph does",
                      theme=theme)


def render_training_memory(run: Run, path: str | os.PathLike, options: Options,
                           iteration: int | None = None) -> Path:
    """Write the run's memory chart to ``path`` (.svg, .png or .pdf): the peak of every pass
    as a line, or with ``iteration`` (a pass's index, as the script counts its passes) that
    pass's memory timeline."""
    if iteration is None:
        return render_chart(peak_svg(run, theme=options.theme), path)
    kept = {it.index: it for it in run.iterations}
    if iteration not in kept:
        raise DrawError(f"the run kept no pass {iteration} (it kept {sorted(kept)})")
    return render_chart(timeline_svg(timeline(kept[iteration].graph), theme=options.theme,
                                     title=f"Memory kept for backward in pass {iteration}"),
                        path)
