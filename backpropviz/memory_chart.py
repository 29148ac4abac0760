"""Charts of memory kept for backward, as plain SVG for a 1920×1080 slide: the timeline and growth.

The SVG is written here, not by a plotting library: the charts take the
figures' themes and fonts (style.py), come out byte-identical on every run,
are embedded as they are in the step-through page, and each bar is an
element a test (or a page) can find by id. PNG and PDF are converted from
that SVG by cairosvg, which loads only for them.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from html import escape
from pathlib import Path

import networkx as nx

from .errors import BackpropvizError
from .files import write_atomically
from .formatting import byte_size
from .glyphs import with_fallback_fonts
from .memory import BACKWARD, FORWARD, INNER, MemoryStep, Timeline, timeline, to_json
from .metrics import fit_text, text_width
from .names import name_runs, subscripted
from .page_head import page_head
from .style import FONT, NAME_FONT, THEMES, Theme

__all__ = ["CHART_FORMATS", "ChartError", "Panel", "Series", "Svg", "chart_bytes", "growth_svg",
           "memory_output", "mix", "render_chart", "step_meter", "timeline_html", "timeline_svg",
           "x_ticks"]

CHART_FORMATS = ("svg", "png", "pdf")
WIDTH, HEIGHT = 1920, 1080
INSTALL_HINT = "install it with: pip install 'backpropviz[chart]'"

# Sizes in SVG pixels of the 1920×1080 frame: every number at least 20 px.
TITLE_PX, SUBTITLE_PX, TICK_PX, NAME_PX, PHASE_PX, LIST_PX = 44, 26, 22, 22, 24, 24
# Past these, a bar is drawn as its roles' totals, not one block per value.
MAX_BLOCKS, MAX_LABELLED_STEPS = 40, 48
_STAGGER_PX = 62  # how much lower the second row of staggered labels sits


class ChartError(BackpropvizError):
    """A chart that cannot be written, explained in one sentence."""


# ---------------------------------------------------------------- SVG writing


def mix(color: str, other: str, share: float) -> str:
    """``color`` with ``share`` of ``other`` mixed in (both #rrggbb)."""
    a = [int(color[i:i + 2], 16) for i in (1, 3, 5)]
    b = [int(other[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * share):02x}" for x, y in zip(a, b, strict=True))


class Svg:
    """An SVG document built element by element."""

    def __init__(self, theme: Theme, width: int = WIDTH, height: int = HEIGHT) -> None:
        self.theme = theme
        self.parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
                      f'width="{width}" height="{height}" font-family="{FONT}" '
                      f'class="memory-chart theme-{theme.name}">']
        if not theme.transparent:
            self.parts.append(f'<rect width="{width}" height="{height}" '
                              f'fill="{theme.background}"/>')

    def add(self, text: str) -> None:
        self.parts.append(text)

    def text(self, x: float, y: float, text: str, px: float, fill: str, *,
             anchor: str = "start", italic: bool = False, bold: bool = False,
             extra: str = "") -> None:
        style = ' font-style="italic"' if italic else ""
        style += ' font-weight="bold"' if bold else ""
        family = f' font-family="{NAME_FONT}"' if italic else ""
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{px}" fill="{fill}" '
                          f'text-anchor="{anchor}"{family}{style}{extra}>{escape(text)}</text>')

    def name(self, x: float, y: float, text: str, px: float, fill: str, *,
             anchor: str = "start", extra: str = "") -> None:
        """A value's name in the names' italic serif, typeset as the figures set it:
        W1 x + b1 as W₁ x + b₁ (each index a lowered, smaller run). Anchored at its
        start, the middle measured here: cairosvg misplaces the runs of a centred text."""
        if anchor == "middle":
            x -= text_width(text, px, "serif") / 2
        runs = []
        for plain, sub in name_runs(text):
            runs.append(escape(plain))
            if sub:
                drop = 0.25 * px
                runs.append(f'<tspan dy="{drop:.1f}" font-size="{0.7 * px:.1f}">'
                            f'{escape(sub)}</tspan><tspan dy="{-drop:.1f}"></tspan>')
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{px}" fill="{fill}" '
                          f'text-anchor="start" font-family="{NAME_FONT}" '
                          f'font-style="italic"{extra}>{"".join(runs)}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str, width: float = 1.5,
             dash: str = "") -> None:
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                          f'stroke="{stroke}" stroke-width="{width}"{dashes}/>')

    def rect(self, x: float, y: float, w: float, h: float, fill: str, extra: str = "") -> None:
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
                          f'fill="{fill}"{extra}/>')

    def done(self) -> str:
        return "\n".join([*self.parts, "</svg>"]) + "\n"


def _ticks(top: float, count: int = 5) -> tuple[list[float], float, str]:
    """Nice ticks from 0 to at least ``top`` bytes, in one unit: (ticks, unit size, unit)."""
    unit, name = 1, "B"
    for size, label in ((1024, "KiB"), (1024 ** 2, "MiB"), (1024 ** 3, "GiB")):
        if top >= size:
            unit, name = size, label
    scaled = max(top / unit, 1e-9)
    raw = scaled / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    if unit == 1:
        step = max(1, round(step))
    ticks = [i * step for i in range(math.ceil(scaled / step - 1e-9) + 1)]
    if ticks[-1] < scaled:
        ticks.append(ticks[-1] + step)
    return ticks, unit, name


def _tick_label(value: float, name: str) -> str:
    return f"{value:g} {name}"


def _y_axis(svg: Svg, left: float, right: float, top: float, bottom: float,
            ticks: list[float], name: str) -> None:
    t = svg.theme
    for tick in ticks:
        y = bottom - (bottom - top) * tick / ticks[-1]
        svg.line(left, y, right, y, mix(t.muted, t.backdrop, 0.75), 1)
        svg.text(left - 14, y + TICK_PX * 0.35, _tick_label(tick, name), TICK_PX, t.muted,
                 anchor="end")
    svg.line(left, bottom, right, bottom, t.text, 2)


# ---------------------------------------------------------------- the timeline


def _role_colors(theme: Theme) -> dict[str, tuple[str, str]]:
    """Fills by role: (one value, its neighbour), so that adjacent blocks stay apart."""
    bg = theme.backdrop
    activation = (mix(theme.saved, bg, 0.45), mix(theme.saved, bg, 0.65))
    return {"param": (theme.param_fill, mix(theme.param_fill, theme.grad, 0.25)),
            INNER: (mix(theme.muted, bg, 0.55), mix(theme.muted, bg, 0.7)),
            "other": activation}


_ROLE_WORDS = {"param": "parameters", "other": "inputs, intermediates",
               INNER: "inside ops (autograd)"}


def _group(role: str) -> str:
    return role if role in ("param", INNER) else "other"


def timeline_svg(line: Timeline, *, theme: str = "light", title: str | None = None) -> str:
    """The timeline as a 1920×1080 SVG: one bar per step of bytes held, forward then backward,
    each bar stacked from the values it holds, the peak marked and its values named."""
    if not line.steps:
        raise ChartError("the graph has no op, so nothing is kept for backward; "
                         "compute something from a value that needs a gradient")
    t = THEMES[theme]
    svg = Svg(t)
    colors = _role_colors(t)
    peak = line.peak
    assert peak is not None  # there are steps
    left, right, top, bottom = 170, 1410, 190, 870
    if _staggered(line, (right - left) / max(1, len(line.steps))):
        bottom -= _STAGGER_PX  # (the second row of labels below the bars)
    ticks, unit, unit_name = _ticks(max(line.peak_bytes, 1) * 1.05)
    scale = (bottom - top) / (ticks[-1] * unit)

    svg.text(left - 110, 72, title or "Memory kept for the backward pass", TITLE_PX, t.text,
             bold=True)
    held_at_peak = len(peak.held)
    kept_any = line.peak_bytes > 0
    svg.text(left - 110, 118,
             f"peak {byte_size(line.peak_bytes)} after step {peak.index} "
             f"({line.symbols[peak.op]} → {line.results[peak.op]}): {held_at_peak} "
             f"value{'s' if held_at_peak != 1 else ''} kept, each counted once" if kept_any
             else "nothing is kept: no backward rule of these ops reads a value",
             SUBTITLE_PX, t.muted)
    _y_axis(svg, left, right, top, bottom, ticks, unit_name)

    count = len(line.steps)
    slot = (right - left) / count
    bar = max(1.0, slot * 0.78)
    by_blocks = len(line.kept) <= MAX_BLOCKS
    order = {item: index for index, item in enumerate(line.kept)}
    for step in line.steps:
        x = left + (step.index - 1) * slot + (slot - bar) / 2
        what = ", ".join(f"{line.kept[item].name} {byte_size(line.kept[item].nbytes)}"
                         for item in reversed(step.held)) or "nothing"
        cls = f"step {step.phase}" + (" peak" if step is peak and kept_any else "")
        svg.add(f'<g id="step-{step.index}" class="{cls}" data-op="{escape(str(step.op))}" '
                f'data-bytes="{step.bytes_held}"><title>{escape(_step_title(line, step))}: '
                f'{byte_size(step.bytes_held)} kept ({escape(subscripted(what))})</title>')
        y = bottom
        if by_blocks:
            blocks = [(line.kept[item].role, line.kept[item].nbytes, item, order[item])
                      for item in step.held]
        else:
            totals: dict[str, int] = {}
            for item in step.held:
                group = _group(line.kept[item].role)
                totals[group] = totals.get(group, 0) + line.kept[item].nbytes
            blocks = [(group, nbytes, group, 0) for group, nbytes in totals.items()]
        for role, nbytes, item, index in blocks:
            height = nbytes * scale
            fill = colors[_group(role)][index % 2]
            svg.rect(x, y - height, bar, height, fill,
                     f' class="kept role-{_group(role)}" data-value="{escape(item)}"'
                     f' stroke="{t.backdrop}" stroke-width="{1 if bar > 6 else 0}"')
            name = line.kept[item].name if by_blocks else _ROLE_WORDS[role]
            if (item in step.kept or (not by_blocks and step.index == 1)) and \
                    height >= NAME_PX + 6 and \
                    text_width(name, NAME_PX, "serif" if by_blocks else "sans") <= bar - 8:
                # Named where it is first kept: reading left to right, each block's value.
                (svg.name if by_blocks else svg.text)(
                    x + bar / 2, y - height / 2 + NAME_PX * 0.35, name, NAME_PX,
                    _readable_on(fill, t), anchor="middle", extra=' class="block-name"')
            y -= height
        freed = sum(line.kept[item].nbytes for item in step.freed)
        if freed:  # what this step let go, as the outline of the blocks it was
            svg.rect(x + 1, y - freed * scale, bar - 2, freed * scale, "none",
                     f' class="freed" stroke="{t.muted}" stroke-width="2"'
                     ' stroke-dasharray="6 5"')
            names = ", ".join(line.kept[item].name for item in step.freed)
            if freed * scale >= NAME_PX + 6 and text_width(names, NAME_PX, "serif") <= bar - 8:
                svg.name(x + bar / 2, y - freed * scale / 2 + NAME_PX * 0.35, names, NAME_PX,
                         t.muted, anchor="middle", extra=' class="freed-names"')
        if step is peak and kept_any:
            svg.rect(x - 3, y - 3, bar + 6, bottom - y + 3, "none",
                     f' stroke="{t.highlight_line}" stroke-width="4"')
        svg.add("</g>")

    _step_labels(svg, line, left, slot, bottom)
    if kept_any:
        # The peak: a dashed line across, and its bytes; then what makes it up.
        peak_y = bottom - line.peak_bytes * scale
        svg.line(left, peak_y, right, peak_y, t.highlight_line, 2.5, dash="10 8")
        svg.text(right, peak_y - 12, f"peak {byte_size(line.peak_bytes)}", TICK_PX + 2,
                 t.text, anchor="end", bold=True)
        _peak_list(svg, line, colors, 1450, top)
    return svg.done()


def _step_title(line: Timeline, step: MemoryStep) -> str:
    return (f"after {step.phase} step {step.index}, "
            f"{line.symbols[step.op]} → {subscripted(line.results[step.op])}")


def _step_labels(svg: Svg, line: Timeline, left: float, slot: float, bottom: float) -> None:
    """Each bar's op under it (when there is room), then a bracket for each pass."""
    t = svg.theme
    staggered = _staggered(line, slot)
    if len(line.steps) <= MAX_LABELLED_STEPS:
        # Staggered, every other bar's labels a row lower, when a bar is too narrow
        # for its own: each then has the room of two bars.
        room = (2 if staggered else 1) * slot - 4
        for step in line.steps:
            middle = left + (step.index - 0.5) * slot
            color = t.text if step.phase == FORWARD else t.grad
            below = bottom + (_STAGGER_PX if staggered and step.index % 2 == 0 else 0)
            svg.text(middle, below + 34, fit_text(line.symbols[step.op], room, TICK_PX),
                     TICK_PX, color, anchor="middle")
            svg.name(middle, below + 64,
                     fit_text(line.results[step.op], room, NAME_PX, "serif"),
                     NAME_PX, color, anchor="middle")
    if staggered:
        bottom += _STAGGER_PX
    phases = ((FORWARD, "forward pass", t.text), (BACKWARD, "backward pass", t.grad))
    for phase, words, color in phases:
        steps = [step for step in line.steps if step.phase == phase]
        if not steps:
            continue
        x1 = left + (steps[0].index - 1) * slot + 4
        x2 = left + steps[-1].index * slot - 4
        y = bottom + 92
        svg.line(x1, y, x2, y, color, 3)
        svg.line(x1, y - 10, x1, y, color, 3)
        svg.line(x2, y - 10, x2, y, color, 3)
        svg.text((x1 + x2) / 2, y + 38, words, PHASE_PX, color, anchor="middle")
    svg.text(left - 110, HEIGHT - 40, "Forward: each op keeps what its backward rule will read. "
             "Backward: a value is freed once the last rule that reads it has run.",
             TICK_PX, t.muted)
    if line.backward:
        divider = left + len(line.forward) * slot
        svg.line(divider, 170, divider, bottom + 70, t.muted, 1.5, dash="4 6")


def _staggered(line: Timeline, slot: float) -> bool:
    """Whether some bar's op or result is wider than its bar (the labels are then
    staggered over two rows)."""
    return len(line.steps) <= MAX_LABELLED_STEPS and any(
        text_width(line.symbols[step.op], TICK_PX) > slot - 4
        or text_width(line.results[step.op], NAME_PX, "serif") > slot - 4
        for step in line.steps)


def _luminance(color: str) -> float:
    channels = [int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _readable_on(fill: str, theme: Theme) -> str:
    """The theme's text or background colour, whichever reads better on ``fill``."""
    return max((theme.text, theme.backdrop), key=lambda color: _contrast(color, fill))


def _peak_list(svg: Svg, line: Timeline, colors: dict, x: float, top: float) -> None:
    """The values held at the peak, named with their bytes, top of the stack first; where
    there are too many to draw one by one, those of one name together, the most bytes first."""
    t = svg.theme
    peak = line.peak
    assert peak is not None
    svg.text(x, top - 10, "at the peak:", LIST_PX + 2, t.text, bold=True)
    rows = 15
    order = {item: index for index, item in enumerate(line.kept)}
    entries: list[tuple[str, str, int, int]] = []  # name, colour, bytes, how many
    if len(line.kept) <= MAX_BLOCKS:
        for item in reversed(peak.held):
            kept = line.kept[item]
            entries.append((kept.name, colors[_group(kept.role)][order[item] % 2],
                            kept.nbytes, 1))
    else:
        named: dict[tuple[str, str], list[int]] = {}
        for item in peak.held:
            kept = line.kept[item]
            total = named.setdefault((kept.name, _group(kept.role)), [0, 0])
            total[0] += kept.nbytes
            total[1] += 1
        entries = [(name, colors[group][0], nbytes, count)
                   for (name, group), (nbytes, count)
                   in sorted(named.items(), key=lambda entry: -entry[1][0])]
    shown = entries if len(entries) <= rows else entries[:rows - 1]
    y = top + 30
    for name, fill, nbytes, count in shown:
        svg.rect(x, y - 20, 26, 26, fill, f' stroke="{t.node_line}" stroke-width="1"')
        many = f" ×{count}" if count > 1 else ""
        room = 250 - text_width(many, LIST_PX, "serif")
        svg.name(x + 38, y, fit_text(name, room, LIST_PX, "serif") + many, LIST_PX,
                 t.text, extra=' class="peak-value"')
        svg.text(x + 430, y, byte_size(nbytes), LIST_PX, t.muted, anchor="end")
        y += 38
    if len(shown) < len(entries):
        rest = entries[len(shown):]
        count = sum(entry[3] for entry in rest)
        svg.text(x, y, f"… {count} more: {byte_size(sum(entry[2] for entry in rest))}",
                 LIST_PX, t.muted)
        y += 38
    y += 18
    totals: dict[str, int] = {}
    for role, nbytes in line.bytes_by_role(peak).items():
        totals[_group(role)] = totals.get(_group(role), 0) + nbytes
    for group in ("param", "other", INNER):
        if group in totals:
            svg.rect(x, y - 18, 22, 22, colors[group][0],
                     f' stroke="{t.node_line}" stroke-width="1"')
            svg.text(x + 34, y, f"{_ROLE_WORDS[group]}: {byte_size(totals[group])}", TICK_PX,
                     t.muted)
            y += 32


# ---------------------------------------------------------------- growth


@dataclass(frozen=True)
class Series:
    """One line of a growth panel: a value of y for each x of its panel."""

    label: str
    values: Sequence[float]
    kind: str = "training"  # "training", "parameters" or "inference": how it is drawn


@dataclass(frozen=True)
class Panel:
    title: str
    x_label: str
    xs: Sequence[float]
    series: Sequence[Series]


def growth_svg(panels: Sequence[Panel], *, title: str, subtitle: str = "",
               theme: str = "light") -> str:
    """Panels of peak bytes against a size (depth, batch), side by side on one 1920×1080 slide."""
    t = THEMES[theme]
    svg = Svg(t)
    svg.text(60, 72, title, TITLE_PX, t.text, bold=True)
    if subtitle:
        svg.text(60, 118, subtitle, SUBTITLE_PX, t.muted)
    styles = {"training": (t.saved, 5, ""), "parameters": (t.text, 3, ""),
              "inference": (t.muted, 4, "14 10")}
    top_all = max((max(s.values, default=0) for p in panels for s in p.series), default=0)
    ticks, unit, unit_name = _ticks(max(top_all, 1) * 1.05)
    y_max = ticks[-1] * unit
    width = (WIDTH - 120) / len(panels)
    for index, panel in enumerate(panels):
        left = 60 + index * width + 130
        right = 60 + (index + 1) * width - 60
        top, bottom = 230, 860
        svg.text((left + right) / 2, top - 40, panel.title, SUBTITLE_PX + 4, t.text,
                 anchor="middle", bold=True)
        _y_axis(svg, left, right, top, bottom, ticks, unit_name)
        x_max = max(panel.xs)

        def at(x: float, y: float, box: tuple = (left, right, top, bottom),
               x_max: float = x_max) -> tuple[float, float]:
            x0, x1, y0, y1 = box
            return x0 + (x1 - x0) * x / x_max, y1 - (y1 - y0) * y / y_max

        for x in x_ticks(x_max):
            px, _ = at(x, 0)
            svg.line(px, bottom, px, bottom + 10, t.text, 2)
            svg.text(px, bottom + 40, f"{x:g}", TICK_PX, t.text, anchor="middle")
        svg.text((left + right) / 2, bottom + 86, panel.x_label, PHASE_PX, t.text,
                 anchor="middle")
        for series in panel.series:
            color, pen, dash = styles[series.kind]
            points = [at(x, y) for x, y in zip(panel.xs, series.values, strict=True)]
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            dashes = f' stroke-dasharray="{dash}"' if dash else ""
            svg.add(f'<polyline class="series {series.kind}" points="{path}" fill="none" '
                    f'stroke="{color}" stroke-width="{pen}"{dashes}/>')
            for (px, py), value in zip(points, series.values, strict=True):
                svg.add(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{pen + 3}" fill="{color}" '
                        f'data-bytes="{value:g}"><title>{byte_size(int(value))}</title></circle>')
            end_x, end_y = points[-1]
            label = f"{series.label}: {byte_size(int(series.values[-1]))}"
            svg.text(end_x - 6, end_y - 18, label, TICK_PX, color, anchor="end", bold=True)
    return svg.done()


def x_ticks(x_max: float) -> list[float]:
    step = next(s for s in (1, 2, 4, 8, 16, 32, 64, 128) if x_max / s <= 8)
    return [float(x) for x in range(0, int(x_max) + 1, step)]


# ---------------------------------------------------------------- the step-through page


def step_meter(line: Timeline, *, theme: str = "light", closing: int | None = None) -> dict:
    """What the step-through page's memory bar shows at each of its steps, JSON-ready.

    Page step 0 is the end of the forward pass, step k the k-th backward step:
    ``bytes`` held then, ``fill`` (percent of the peak), ``text``, the value ids
    ``held`` (highlighted in the graph) and ``freed`` by that step, and
    ``spark``: the id of the bar of the small whole-timeline chart ``svg``.
    ``closing`` is the page step of a rolled loop's closing step, which runs no op
    of the drawing: the memory of the step before.
    """
    peak = line.peak_bytes
    forward, backward = line.forward, line.backward
    page_steps = [forward[-1], *backward] if forward else []
    if closing is not None and 0 < closing <= len(page_steps):
        held = page_steps[closing - 1]
        page_steps.insert(closing, replace(held, freed=(), kept=()))
    meter: dict = {"peak": peak, "bytes": [], "fill": [], "text": [], "held": [], "freed": [],
                   "spark": []}
    for k, step in enumerate(page_steps):
        when = "after the forward pass" if k == 0 else f"after backward step {k}"
        text = f"{when}: {byte_size(step.bytes_held)} kept for backward"
        text += " (the peak)" if step.bytes_held == peak and peak else \
            f" (peak {byte_size(peak)})"
        if step.freed:
            text += "; freed: " + subscripted(", ".join(line.kept[item].name
                                                        for item in step.freed))
        meter["bytes"].append(step.bytes_held)
        meter["fill"].append(round(100 * step.bytes_held / peak, 2) if peak else 0)
        meter["text"].append(text)
        meter["held"].append([item for item in step.held if line.kept[item].role != INNER])
        meter["freed"].append([item for item in step.freed if line.kept[item].role != INNER])
        meter["spark"].append(f"spark-{step.index}")
    meter["svg"] = _sparkline(line, THEMES[theme])
    return meter


def _sparkline(line: Timeline, t: Theme, width: int = 240, height: int = 48) -> str:
    """The whole timeline, small: one bar per step, forward in the text colour, backward in
    the gradients' (the page outlines the bar of the step it shows)."""
    count = max(1, len(line.steps))
    slot = width / count
    peak = max(1, line.peak_bytes)
    parts = [f'<svg id="memory-spark" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="bytes kept for backward at every step">']
    for step in line.steps:
        h = max(1.0, (height - 4) * step.bytes_held / peak) if step.bytes_held else 0.0
        color = t.text if step.phase == FORWARD else t.grad
        x = (step.index - 1) * slot
        # A slot the page shades for the step it shows, so that an empty bar shows too.
        parts.append(f'<g id="spark-{step.index}" class="spark-step {step.phase}">'
                     f"<title>{escape(_step_title(line, step))}: "
                     f"{escape(byte_size(step.bytes_held))}</title>"
                     f'<rect class="spark-slot" x="{x:.1f}" y="0" width="{slot:.1f}" '
                     f'height="{height}" fill="transparent"/>'
                     f'<rect class="spark-bar" x="{x + 0.5:.1f}" y="{height - 2 - h:.1f}" '
                     f'width="{max(1.0, slot - 1):.1f}" height="{h:.1f}" fill="{color}"/></g>')
    parts.append(f'<line x1="0" y1="{height - 1}" x2="{width}" y2="{height - 1}" '
                 f'stroke="{t.muted}" stroke-width="1"/></svg>')
    return "".join(parts)


# ---------------------------------------------------------------- the page


def timeline_html(line: Timeline, *, theme: str = "light", title: str | None = None) -> str:
    """One self-contained page: the chart (each bar tells what it holds on hover) and a
    table of the steps, with what each kept and freed."""
    t = THEMES[theme]
    heading = title or "Memory kept for the backward pass"
    rows = []
    for step in line.steps:
        names = [line.kept[item].name for item in (step.kept or step.freed)]
        change = ("keeps " if step.kept else "frees " if step.freed else "") + ", ".join(names)
        rows.append(f'<tr class="{step.phase}"><td>{step.index}</td><td>{step.phase}</td>'
                    f"<td>{escape(line.symbols[step.op])} → "
                    f"{escape(subscripted(line.results[step.op]))}"
                    f"</td><td>{escape(subscripted(change))}</td>"
                    f'<td class="bytes">{escape(byte_size(step.bytes_held))}</td></tr>')
    style = f"""body {{ margin: 0; padding: 1em 2vw; background: {t.backdrop}; color: {t.text};
  font-family: {FONT}; }}
svg.memory-chart {{ width: 100%; height: auto; max-height: 92vh; display: block; }}
g.step:hover rect.kept {{ opacity: 0.8; }}
table {{ border-collapse: collapse; margin: 1em auto; font-size: 16px; }}
td, th {{ padding: 0.2em 0.8em; text-align: left; border-bottom: 1px solid {t.node_line}; }}
tr.backward td {{ color: {t.grad}; }}
td.bytes {{ text-align: right; font-variant-numeric: tabular-nums; }}
"""
    return f"""{page_head(heading, style)}
<body>
{timeline_svg(line, theme=theme, title=title)}
<table>
<thead><tr><th>step</th><th>pass</th><th>op → result</th><th>change</th><th>held after</th>
</tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
</body>
</html>
"""


# ---------------------------------------------------------------- files


def memory_output(G: nx.MultiDiGraph, fmt: str, *, theme: str = "light",
                  title: str | None = None) -> bytes:
    """The memory timeline of ``G`` in ``fmt``: json, html, or a chart (svg, png, pdf)."""
    line = timeline(G)
    if fmt == "json":
        return (json.dumps(to_json(line), indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    if fmt == "html":
        return timeline_html(line, theme=theme, title=title).encode("utf-8")
    return chart_bytes(timeline_svg(line, theme=theme, title=title), fmt)



def chart_bytes(svg: str, fmt: str) -> bytes:
    """The chart in ``fmt`` (svg, png at 1920×1080, or pdf)."""
    if fmt == "svg":
        return svg.encode("utf-8")
    if fmt not in CHART_FORMATS:
        raise ChartError(f"unknown chart format: {fmt!r} (must be one of {list(CHART_FORMATS)})")
    try:
        import cairosvg
    except ImportError:
        raise ChartError(f"a {fmt.upper()} chart needs cairosvg, which is not installed; "
                         f"{INSTALL_HINT} (or write .svg)") from None
    convert = cairosvg.svg2png if fmt == "png" else cairosvg.svg2pdf
    return convert(bytestring=with_fallback_fonts(svg).encode("utf-8"))


def render_chart(svg: str, path: str | os.PathLike) -> Path:
    """Write the chart to ``path`` in the format its extension names, whole or not at all."""
    path = Path(path)
    return write_atomically(path, chart_bytes(svg, path.suffix[1:].lower()))
