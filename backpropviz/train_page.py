"""The step-through page of a training run: every kept pass, forward, backward and the update.

Each pass is the ordinary page's backward pass (html.py's pictures and data,
made once per pass), followed by one more step: the update, where each
parameter's box shows what the script did to it, with the recorded numbers
(``w ← w − η·∂L/∂w = 2 − 0.1 · 1.5 = 1.85``; without a rate, ``w: 2 → 1.85``).
The next pass starts from the values that update left, as its own boxes
show. A loss curve beside the graph marks the pass shown; an iteration
control sits beside the step control, and ``#iter=3&step=5`` (the fourth kept
pass, its fifth step) links to a moment. Nothing is computed by the page.
"""

from __future__ import annotations

import os
from pathlib import Path

from .files import write_atomically
from .formatting import display_number, number_text
from .html import asset, json_for_script, page_data, svg_frames
from .memory_chart import Svg
from .names import differentiated, subscripted, value_names
from .options import Options
from .page_head import page_head, theme_css
from .style import THEMES
from .train_figure import curve_panel, loss_curve, require_passes
from .training import Iteration, Run
from .updates import parameter_nodes, start_line, update_line
from .views import drawn_graph

__all__ = ["render_training_page", "training_page"]

# The loss curve beside the graph, in its own SVG pixels (the page scales it).
CURVE_WIDTH, CURVE_HEIGHT = 420, 300
CURVE_SIZES = (24.0, 20.0, 20.0)  # its title, ticks and end labels
# The stage beside the loss curve in a 1280x720 window: each pass is laid out to fill it.
STAGE_FRAME = "940x480"


# A parameter's update drawn beside its box is its line whole up to this many
# characters; past them (a matrix's), its rule alone, the numbers left to the caption
# (a 2×3 weight's line, set at 13 px, ran across the picture over the other boxes).
MARK_CHARACTERS = 64


def _mark(line: str) -> str:
    """What the page draws beside a parameter's box of its update ``line``."""
    return line if len(line) <= MARK_CHARACTERS else line.split(" = ", 1)[0]


def _pass_data(iteration: Iteration, later: bool, options: Options) -> dict:
    """One kept pass for the page: its picture and steps (html.py's), the update's lines,
    each parameter's node, and (``later``: not the first pass) where it started from."""
    G = drawn_graph(iteration.graph, **options.view())
    svg, frames, graph_classes = svg_frames(G, rankdir=options.rankdir or "LR",
                                            theme=options.theme,
                                            precision=options.precision, fit=STAGE_FRAME)
    data = page_data(G, precision=options.precision)
    names = value_names(G)
    top = differentiated(G, names).text if G.graph.get("seeds") else "L"
    nodes = parameter_nodes(G, names)
    updates = [{"name": name, "node": nodes.get(name), "line": line,
                "mark": _mark(line), "after": number_text(update.after, options.precision)}
               for name, update in iteration.parameters.items()
               for line in [subscripted(update_line(name, update, top, options.precision))]]
    start = subscripted(start_line(iteration, options.precision)) if later else ""
    return {"index": iteration.index, "loss": display_number(iteration.loss, options.precision),
            "svg": svg, "frames": frames, "graphClasses": graph_classes,
            "steps": data["steps"], "values": data["values"], "ops": data["ops"],
            "updates": updates, "start": start}


def _loss_svg(run: Run, theme: str, precision: int) -> str:
    """The loss per pass, small, each pass's point marked by id (``loss-point-INDEX``)."""
    svg = Svg(THEMES[theme], CURVE_WIDTH, CURVE_HEIGHT)
    x_max = max(1, run.iterations[-1].index + 1)
    curve_panel(svg, (80, 64, CURVE_WIDTH - 24, CURVE_HEIGHT - 44), loss_curve(run),
                x_max=x_max, precision=precision, sizes=CURVE_SIZES, from_zero=True,
                point_class="loss-point")
    return svg.done().replace('class="memory-chart', 'id="loss-curve" class="loss-curve', 1)


def training_page(run: Run, options: Options) -> str:
    """The run's page as one self-contained HTML text (see the module's docstring)."""
    require_passes(run)
    passes = [_pass_data(iteration, k > 0, options) for k, iteration in enumerate(run.iterations)]
    palette = THEMES[options.theme]
    data = {"passes": passes, "notes": run.notes, "every": run.every}
    style = f'{theme_css(palette)}\n{asset("html_page.css")}\n{asset("train_page.css")}'
    count = len(passes)
    return f"""{page_head(f"backpropviz: training, {count} passes", style)}
<body class="theme-{palette.name}">
<div id="bpv" class="training" data-iter="0" data-step="0">
<div id="stage-row">
<main id="stage"></main>
<aside id="loss-box">
{_loss_svg(run, options.theme, options.precision)}
<div id="pass-loss" aria-live="polite"></div>
</aside>
</div>
<section id="caption-box">
<div id="step-label" class="step-label"></div>
<div id="caption" class="caption" aria-live="polite"></div>
<div id="rule" class="rule"></div>
</section>
<nav id="controls" aria-label="passes and steps">
<span class="group" aria-label="passes">
<button type="button" id="prev-iter" title="previous pass (PageUp or [)">« pass</button>
<input type="range" id="iteration" min="0" max="{count - 1}" value="0" step="1"
 aria-label="pass">
<output id="iter-counter" for="iteration"></output>
<button type="button" id="next-iter" title="next pass (PageDown or ])">pass »</button>
</span>
<span class="group" aria-label="steps">
<button type="button" id="prev" title="previous step (←)">◀ back</button>
<button type="button" id="play" title="play / pause (space)">▶ play</button>
<button type="button" id="next" title="next step (→)">next ▶</button>
<input type="range" id="slider" min="0" max="0" value="0" step="1" aria-label="step">
<output id="counter" for="slider"></output>
</span>
</nav>
</div>
<script type="application/json" id="bpv-data">{json_for_script(data)}</script>
<script>
{asset("caption_room.js")}{asset("train_page.js")}</script>
</body>
</html>
"""


def render_training_page(run: Run, path: str | os.PathLike, options: Options) -> Path:
    """Write the run's page to ``path``, whole or not at all; return the path."""
    return write_atomically(path, training_page(run, options).encode("utf-8"))
