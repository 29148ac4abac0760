"""A one-file HTML page that steps through the backward pass, built from the IR."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from html import escape, unescape
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Any

import networkx as nx

from .captions import Caption, step_captions
from .diagram import draw, step_diagrams
from .dot import CONTINUE_TO, badge_pt, edge_id
from .errors import DrawError
from .files import write_atomically
from .folding import bands
from .formatting import MAX_ITEMS, dead_cells, format_array
from .graphviz import portable_svg
from .ir import operand_edges, result_of
from .memory import timeline
from .memory_chart import step_meter
from .names import differentiated, subscripted, value_names
from .page_groups import opened_groups
from .page_head import dead_cell_css, page_head, theme_css
from .page_loop import loop_data, loop_panel
from .practice import practice_questions
from .schema import validated_once
from .script import as_graph
from .step_drawing import StepDrawing
from .steps import backward_steps, closing_step, dead_masks, loop_sums_known, start_grads
from .style import FONT, THEMES
from .typeset import caption_runs
from .views import drawn_graph

__all__ = ["Page", "asset", "json_for_script", "page_data", "page_head", "render_html",
           "step_through", "svg_frames", "to_html", "value_details"]

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"

# Tooltips show whole arrays; only past this many entries a side are they elided.
TOOLTIP_MAX_ITEMS = 64
# ...and every number to this many significant digits (a float64 holds 15 to 17).
FULL_PRECISION = 15


def _drawn(x: Any, precision: int, max_items: int = MAX_ITEMS) -> list[list[str]]:
    """A number or array as draw writes it: format_array's cells, with a true
    minus sign as in draw.display_number."""
    return [[cell.replace("-", "\u2212") for cell in row]
            for row in format_array(x, precision, max_items)]


def _full(x: Any, precision: int) -> list[list[str]]:
    """A whole number or array as the tooltip shows it."""
    return _drawn(x, precision, TOOLTIP_MAX_ITEMS)


def _exact(x: Any) -> list[list[str]]:
    """A whole number or array at full precision, as hovering a value shows it."""
    return _full(x, FULL_PRECISION)


def page_data(G: nx.MultiDiGraph, *, precision: int = 4) -> dict[str, Any]:
    """The backward pass step by step, as JSON-ready data for the page and its tests.

    ``steps[k]`` is the state after k backward steps: ``op`` (None at step 0),
    its ``result``, the operand ``edges`` it sent gradients along (SVG ids),
    ``grads`` (every value with a gradient so far: its running sum, whole,
    formatted as drawn), ``updated`` and ``accumulated`` (the values this step
    changed, and those of them that already had a gradient: ``+=``), and the
    chain-rule ``caption`` (its worked lines, with the engine's numbers, one a
    line) and ``rule`` of captions.py. ``values`` and ``ops``
    describe the nodes for the tooltips (a value's data at full precision);
    ``contributions`` holds each operand
    edge's contribution as drawn (and its dead-ReLU cells).
    """
    names = value_names(G)
    values = {str(node): {"name": subscripted(names[node].text), "role": attrs["role"],
                          "shape": list(attrs["shape"]), "data": _exact(attrs["data"])}
              for node, attrs in G.nodes(data=True) if attrs["kind"] == "value"}
    # (what an op is, as the page says it: a module's operator by its class, model.fc (Linear))
    classes = G.graph.get("module_classes", {})
    ops = {str(node): {"op": classes.get(attrs["symbol"], attrs["op"]) if attrs["op"] == "group"
                       else attrs["op"], "symbol": attrs["symbol"],
                       "result": str(result_of(G, node)),
                       "operands": [edge_id(*edge) for edge in operand_edges(G, node)]}
           for node, attrs in G.nodes(data=True) if attrs["kind"] == "op"}
    # draw labels only a fork's edges with their contributions (elsewhere the
    # contribution is the operand's gradient); the page also shows it on the
    # edges of the current op, laid out as draw lays out numbers.
    _, dead_edges = dead_masks(G)
    contributions = {}
    for u, v, key, grad in G.edges(keys=True, data="grad"):
        # (a constant's share is left out, as draw leaves out its gradient)
        if grad is not None and G.nodes[u].get("role") != "const":
            entry: dict[str, Any] = {"cells": _drawn(grad, precision)}
            if (u, v, key) in dead_edges:
                entry["dead"] = dead_cells(dead_edges[u, v, key])
            contributions[edge_id(u, v, key)] = entry
    captions = step_captions(G, precision)
    seeds = start_grads(G)  # (and a rolled loop's weights' sums so far)
    shown: dict[int, list] = {}  # each running sum as shown, by the IR's object (held there)

    def full(grad: Any) -> list[list[str]]:
        if id(grad) not in shown:
            shown[id(grad)] = _full(grad, precision)
        return shown[id(grad)]
    states = [{"op": None, "result": None, "edges": [], "updated": [], "accumulated": [],
               "grads": {str(v): full(g) for v, g in seeds.items()},
               "caption": subscripted("\n".join(captions[0].worked)),
               "rule": subscripted(captions[0].rule),
               "typeset": _typeset_lines(captions[0])}]
    for step, caption in zip(backward_steps(G), captions[1:], strict=True):
        states.append({
            "op": None if step.op is None else str(step.op),
            "result": None if step.op is None else str(step.result),
            **({"title": "the repetitions not drawn add their shares"} if step.op is None
               else {}),  # (a rolled loop's closing step: no op of the drawing)
            "edges": [edge_id(*edge) for edge in step.edges],
            "updated": [str(v) for v in step.updated],
            "accumulated": [str(v) for v in step.accumulated],
            "grads": {str(v): full(g) for v, g in step.grads.items()},
            "caption": subscripted("\n".join(caption.worked)),
            "rule": subscripted(caption.rule),
            "typeset": _typeset_lines(caption),
        })
    return {"values": values, "ops": ops, "contributions": contributions, "steps": states}


def _typeset_lines(caption: Caption) -> list[list[tuple[Any, ...]]]:
    """A caption's worked lines as the page typesets them (typeset.caption_runs: names
    in italics with their indices lowered, arrays in brackets, as the figures set them)."""
    return [caption_runs(line) for line in caption.worked]


def value_details(G: nx.MultiDiGraph) -> dict[str, dict[str, Any]]:
    """What hovering or focusing a value shows besides its data, at full precision:
    its gradient after each step that changed it (``grads``: ``[step, cells]``), and
    where that gradient came from (``sources``: each edge's share, the op it came
    back through, which operand it was if the op took the value twice, and the step;
    the seed at step 0). A share that reads as the gradient its step left (a value's
    first share, or its seed) is ``None``: the page reads it there, not twice."""
    seeds = G.graph.get("seeds", {})
    details = {str(node): {"grads": [], "sources": []}
               for node, attrs in G.nodes(data=True) if attrs["kind"] == "value"}
    for node, before in loop_sums_known(G).items():  # (not a share drawn)
        details[str(node)]["grads"].append([0, _exact(before)])
        details[str(node)]["sources"].append({
            "edge": None, "op": None, "operand": None, "step": 0, "share": _exact(before),
            "said": "the repetitions after the drawn one"})
    shares = G.graph.get("loop_shares", {})
    for node, seed in seeds.items():
        details[str(node)]["grads"].append([0, _exact(seed)])
        details[str(node)]["sources"].append({"edge": None, "op": None, "operand": None,
                                              "step": 0, "share": _exact(seed)})
    for index, step in enumerate(backward_steps(G), start=1):
        for u, v, key in step.edges:
            grad = G.edges[u, v, key].get("grad")
            if grad is not None:
                twice = G.number_of_edges(u, v) > 1  # a + a: say which a
                details[str(u)]["sources"].append({
                    "edge": edge_id(u, v, key), "op": str(v), "step": index,
                    "operand": G.edges[u, v, key]["arg"] + 1 if twice else None,
                    "share": _exact(grad)})
        for value in step.updated:
            details[str(value)]["grads"].append([index, _exact(step.grads[value])])
        if step.op is None:  # a rolled loop's closing step: each share, the engine's
            for value in step.updated:
                details[str(value)]["sources"].extend(_closing_sources(shares.get(value, ()),
                                                                       index))
    for detail in details.values():
        left = {step: cells for step, cells in detail["grads"]}
        for source in detail["sources"]:
            if source["share"] == left.get(source["step"]):
                source["share"] = None
    return details


# The most shares of a closing step a tooltip lists one by one (the rest are counted).
LISTED_SHARES = 8


def _closing_sources(shares: list, step: int) -> list[dict[str, Any]]:
    """A shared value's sources at a rolled loop's closing step: each share as backward
    sent it, from its repetition; past LISTED_SHARES, the rest counted."""
    sources = [{"edge": None, "op": None, "operand": None, "step": step, "share": _exact(share),
                "said": f"repetition {t}" if t else "a use outside the loop"}
               for t, share in shares[:LISTED_SHARES]]
    if len(shares) > LISTED_SHARES:
        sources.append({"edge": None, "op": None, "operand": None, "step": step, "share": [],
                        "said": f"{len(shares) - LISTED_SHARES} more repetitions"})
    return sources


# ---------------------------------------------------------------- the SVG


def _serialize(element: ET.Element) -> str:
    """An element as SVG text for the page, its tail too, as ElementTree writes it but
    without the namespace declarations (left to <svg>) and without its cost per call
    (a page writes an element of every look of every node)."""
    parts: list[str] = []
    _write(element, parts)
    return "".join(parts)


_QNAMES: dict[str, str] = {}  # "{namespace}name" as written: "name", "xlink:name"
# What the page's SVG leaves each element to inherit: the font graphviz writes on every
# text but the names' (set once, on <svg>), and the anchor SVG starts text at anyway.
# (Some 40 bytes a number, a tenth of a page.)
_INHERITED = {("font-family", FONT), ("text-anchor", "start")}


def _write(element: ET.Element, parts: list[str]) -> None:
    tag = _QNAMES.get(element.tag) or _qname(element.tag)
    parts.append("<" + tag)
    for key, value in element.items():
        if (key, value) not in _INHERITED:
            parts.append(f' {_QNAMES.get(key) or _qname(key)}="{_escaped(value, True)}"')
    if element.text or len(element):
        parts.append(">")
        if element.text:
            parts.append(_escaped(element.text))
        for child in element:
            _write(child, parts)
        parts.append(f"</{tag}>")
    else:
        parts.append(" />")
    if element.tail:
        parts.append(_escaped(element.tail))


def _qname(name: str) -> str:
    uri, brace, local = name[1:].partition("}")
    if name[:1] != "{" or not brace:
        written = name
    elif uri in (SVG_NS, XLINK_NS):
        written = ("xlink:" if uri == XLINK_NS else "") + local
    else:
        raise DrawError(f"graphviz's SVG has an element or attribute in another namespace "
                        f"than SVG's and XLink's ({name}): draw and html disagree")
    _QNAMES[name] = written
    return written


def _escaped(text: str, attribute: bool = False) -> str:
    """Text or an attribute's value escaped as ElementTree escapes it."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    if attribute:
        for character, entity in (('"', "&quot;"), ("\r", "&#13;"), ("\n", "&#10;"),
                                  ("\t", "&#09;")):
            if character in text:
                text = text.replace(character, entity)
    return text


def _parts(svg: str) -> tuple[ET.Element, ET.Element, dict[str, tuple[str, tuple]]]:
    """draw's SVG parsed: the <svg> root, its graph group, and each node and edge
    group by id as ``(class, the SVG text of each of its elements)``.

    Graphviz writes what is neither node nor edge (the legend) straight into
    the graph group, after its title and background; that is gathered into a
    group of its own, ``legend``, so that it can change from step to step too.
    """
    root = ET.fromstring(svg)
    graph = root.find(f"{{{SVG_NS}}}g")
    if graph is None:
        raise DrawError("draw wrote an SVG without a graph group: draw and html disagree")
    legend = ET.Element(f"{{{SVG_NS}}}g", {"id": "legend", "class": "legend"})
    groups: dict[str, tuple[str, tuple]] = {}
    children = list(graph)
    first_kept = 0
    while first_kept < len(children) and children[first_kept].tag in (
            f"{{{SVG_NS}}}title", f"{{{SVG_NS}}}polygon") and first_kept < 2:
        first_kept += 1  # the title and the background polygon stay where they are
    for child in children[first_kept:]:
        if child.tag == f"{{{SVG_NS}}}g" and child.get("id"):
            # A browser shows <title> as a tooltip: graphviz's ("v3") would
            # cover the page's own.
            for title in child.findall(f"{{{SVG_NS}}}title"):
                child.remove(title)
            groups[child.get("id")] = (child.get("class", ""),
                                       tuple(_serialize(part) for part in child))
        else:
            graph.remove(child)
            legend.append(child)
    graph.insert(first_kept, legend)
    groups["legend"] = ("legend", tuple(_serialize(part) for part in legend))
    return root, graph, groups


def svg_frames(G: nx.MultiDiGraph, *, rankdir: str = "LR", theme: str = "light",
               precision: int = 4, fit: Any = None,
               patches: bool = False) -> tuple[str, dict[str, list], list[str]]:
    """draw's picture of every backward step, stored small.

    Returns the SVG of step 0; for each node or edge group that changes at
    some step, its later versions ``[step, class, inner SVG]``; and
    the graph group's class at every step. draw lays every step out the same
    way (it sizes the gradient slots for the final values), so swapping these
    groups into the step-0 picture redraws step k exactly. With ``patches``, a
    version's inner SVG is only what differs from the version before (``_patch``).
    """
    diagrams = step_diagrams(G, rankdir=rankdir, theme=theme, precision=precision, fit=fit,
                             captions=False)  # the page sets the caption beside it
    root, graph, first = _parts(diagrams[0].svg)
    wrap = diagrams[0].fit.wrap if diagrams[0].fit is not None else 1
    if wrap not in (1, ()):  # folded into rows: each node's row, for a group opened in
        # place to move the other rows out of its way (html_groups.js)
        rows = {str(node): row for node, row in bands(G, wrap).items()}
        for child in graph:
            gid = child.get("id") or ""
            # (an edge's mark or badge, "u->v#k/to": the mark it runs to in its tail's row)
            edge = re.match(r"(.*)->(.*)#[^/]*(/.*)?$", gid)
            at = gid if not edge else edge[1] if edge[3] == CONTINUE_TO else edge[2]
            if at in rows:
                child.set("data-row", str(rows[at]))
    for attribute in ("width", "height"):
        root.attrib.pop(attribute, None)
    root.set("preserveAspectRatio", "xMidYMid meet")
    root.set("role", "img")
    history: dict[str, list] = {gid: [[0, *version]] for gid, version in first.items()}
    graph_classes = [graph.get("class", "")]
    if diagrams[0].steps is not None:
        graph_classes = _changes_drawn_together(diagrams[0].steps[0], history, graph_classes)
    else:
        for index, diagram in enumerate(diagrams[1:], start=1):
            _, graph_now, groups = _parts(diagram.svg)
            graph_classes.append(graph_now.get("class", ""))
            if set(groups) != set(first):
                raise DrawError(f"step {index} draws other nodes or edges than step 0: "
                                "draw and html disagree on the picture")
            for gid, version in groups.items():
                if history[gid][-1][1:] != list(version):
                    history[gid].append([index, *version])
    # Version 0 is in the SVG itself; the page reads it from there.
    changing = {gid: [[step, kind, _patch(before[2], parts) if patches else "".join(parts)]
                      for before, (step, kind, parts) in pairwise(versions)]
                for gid, versions in history.items() if len(versions) > 1}
    # (its font for its text, which _write leaves to inherit it)
    svg = _serialize(root).replace("<svg", f'<svg font-family="{FONT}"', 1)
    return svg, changing, graph_classes


def _patch(before: tuple, parts: tuple) -> list:
    """A version's elements as what they share with the version before:
    ``[head, tail, middle]`` is its first ``head`` elements, then ``middle`` (a list
    of elements' SVG), then its last ``tail`` elements."""
    head = 0
    while head < min(len(before), len(parts)) and before[head] == parts[head]:
        head += 1
    tail = 0
    while tail < min(len(before), len(parts)) - head and before[-1 - tail] == parts[-1 - tail]:
        tail += 1
    return [head, tail, list(parts[head:len(parts) - tail])]


def _changes_drawn_together(drawing: StepDrawing, history: dict[str, list],
                            graph_classes: list[str]) -> list[str]:
    """svg_frames' changes read off the looks of a drawing of all the steps at once
    (step_drawing): each node or edge's look, as it changes from step to step; the
    graph group's class at every step."""
    steps = range(1, len(drawing.at))
    for gid in drawing.order:
        shown = 0
        for step in steps:
            look = drawing.at[step][gid]
            if look != shown:
                history[gid].append([step, *_look(drawing.looks[gid][look])])
                shown = look
    for step in steps:
        if drawing.labels[step] != drawing.labels[step - 1]:
            history["legend"].append([step, "legend", _look_inner(drawing.labels[step])])
    return graph_classes + [unescape(drawing.classes[step]) for step in steps]


def _look(group: str) -> tuple[str, tuple]:
    """One look's group (step_drawing) as ``(class, its elements' SVG)``, as _parts
    gives them."""
    tagged = group[group.index("<g "):].replace("<g ", f'<g xmlns="{SVG_NS}" ', 1)
    element = ET.fromstring(portable_svg(tagged.encode("utf-8")))
    return element.get("class", ""), tuple(_serialize(part) for part in element
                                           if part.tag != f"{{{SVG_NS}}}title")


def _look_inner(drawing: str) -> tuple:
    """A label's look (step_drawing) as the inner SVG of the page's legend group."""
    return _look(f"<g >{drawing}</g>")[1]


# ---------------------------------------------------------------- the page


def asset(name: str) -> str:
    """A script or style sheet of the package, as a page carries it: without its
    comments, blank lines and indentation (they are read in the package's file)."""
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    kept, comment = [], False
    for line in text.splitlines():
        line = line.strip()
        if comment or line.startswith("/*"):  # (a comment the line starts with is all of it)
            comment = not line.endswith("*/")
        elif line and not line.startswith("//"):
            kept.append(line)
    return "\n".join(kept) + "\n"


def json_for_script(data: Any) -> str:
    """JSON that cannot end its <script> element early."""
    return (json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


# The stage of the page in a 1280x720 window (less the caption and the controls):
# the drawing is laid out (folded, if that shows it larger) to fill it.
PAGE_FRAME = "1240x500"


def to_html(G: Any, *, names: Any = None, rankdir: str = "LR", theme: str = "light",
            precision: int = 4, fit: Any = PAGE_FRAME, practice: bool = False,
            source: Any = None) -> str:
    """One self-contained HTML page stepping through the backward pass of ``G`` (an IR
    graph, or a Value/Tensor root or roots, named after ``names``, as for ``draw``).

    Step k shows draw's picture of step k (the op of backward_order
    highlighted with its edges, the contributions, the gradients known so
    far) and the chain-rule caption of captions.py; hovering a value shows
    it and its gradient whole. Everything is inline: the page makes no request.
    A group is one op, as in draw's pictures. The drawing is laid out for
    the ``fit`` frame (draw's ``fit``: folded if that shows it larger; None:
    as draw lays it out), and fills the window; it zooms and pans. A group opens in
    place (page_groups.py): ``source`` is the IR a view ``G`` was made from.
    With ``practice`` the gradients are hidden and the page asks for them, step
    by step (practice.py's questions), and scores the answers.
    """
    G = as_graph(G, names)
    source = G if source is None else source
    G = drawn_graph(G)
    svg, frames, graph_classes = svg_frames(G, rankdir=rankdir, theme=theme,
                                            precision=precision, fit=fit, patches=True)
    palette = THEMES[theme]
    data = page_data(G, precision=precision)
    data["frames"] = frames
    data["theme"] = {"grad": palette.grad, "deadText": palette.dead_text,
                     "labelPt": badge_pt(fit)}  # as large as draw's contributions
    data["details"] = value_details(G)
    data["practice"] = practice_questions(G, precision) if practice else None
    data["precision"] = precision  # an answer is checked at the digits drawn
    data["graphClasses"] = graph_classes
    # (practice asks for the steps of the drawing as it is: its groups stay closed)
    data["groups"] = {} if practice else opened_groups(source, G, lambda inner: {
        **page_data(inner, precision=precision),
        "drawing": svg_frames(inner, rankdir=rankdir, theme=theme, precision=precision, fit=None)})
    for state in data["steps"][1:]:
        del state["grads"]  # (the page reads each value's gradients in its details)
    for group in data["groups"].values():
        _as_changes(group["steps"])
    data["loop"] = loop = loop_data(G, precision)  # a rolled loop's repetitions
    data["memory"] = meter = step_meter(timeline(G), theme=theme, closing=closing_step(G))
    spark = meter.pop("svg")  # drawn in the page, not kept in its data
    subject = differentiated(G, value_names(G)).text if G.graph.get("seeds") else "the graph"
    title = f"backpropviz: {'practise ' if practice else ''}the backward pass of {subject}"
    last = len(data["steps"]) - 1
    style = f'{theme_css(palette)}\n{asset("html_page.css")}\n{dead_cell_css(palette)}'
    return f"""{page_head(title, style)}
<body class="theme-{palette.name}">
<div id="bpv" data-step="0" data-steps="{last}">
<main id="stage">
{svg}
</main>
<section id="caption-box">
<div id="step-label" class="step-label"></div>
<div id="caption" class="caption" aria-live="polite"></div>
<div id="rule" class="rule"></div>
{_PRACTICE_PANEL if practice else ""}</section>
{loop_panel(loop) if loop else ""}<section id="memory" aria-label="memory kept for backward" hidden>
{spark}
<div id="memory-bar" title="bytes kept for backward, of the peak"><div id="memory-fill"></div>
</div>
<div id="memory-text" aria-live="polite"></div>
{_MEMORY_KEY}
</section>
<nav id="controls" aria-label="backward steps">
<button type="button" id="first" title="first step (Home)">⇤ first</button>
<button type="button" id="prev" title="previous step (←)">◀ back</button>
<button type="button" id="play" title="play / pause (space)">▶ play</button>
<button type="button" id="next" title="next step (→)">next ▶</button>
<button type="button" id="last" title="last step (End)">last ⇥</button>
<input type="range" id="slider" min="0" max="{last}" value="0" step="1" aria-label="step">
<output id="counter" for="slider">0 / {last}</output>
<button type="button" id="fit" title="fit to the window (0); zoom: wheel, pinch; pan: drag">⤢ fit
</button>
<button type="button" id="follow" aria-pressed="false"
 title="frame each step's op and its values, the numbers large (C)">◎ follow</button>
<button type="button" id="fullscreen" title="full screen (F)">▣ full screen</button>
{_MEMORY_TOGGLE if meter["peak"] else ""}</nav>
<div id="tooltip" role="tooltip" hidden></div>
</div>
<script type="application/json" id="bpv-data">{json_for_script(data)}</script>
<script>
{asset("caption_room.js")}{asset("html_page.js")}{asset("html_groups.js")}\
{asset("html_loop.js") if loop else ""}{asset("html_follow.js")}</script>
</body>
</html>
"""


def _as_changes(steps: list[dict[str, Any]]) -> None:
    """page_data's steps of a group's inside as the page carries them: each step's
    ``grads`` only the gradients it changed (its ``updated``); the page adds them up
    to what is known at each step (every other gradient is as it was the step before).
    The page's own steps carry none past the seeds: value_details has them all."""
    for state in steps[1:]:
        state["grads"] = {value: state["grads"][value] for value in state["updated"]}


# The practice page's question, beside the caption: a field for a number or a
# matrix, or the choices of a question with choices; "show" gives the answer.
_PRACTICE_PANEL = """<div id="practice" role="region" aria-label="practice">
<form id="practice-form" autocomplete="off">
<label for="answer" id="practice-prompt"></label>
<input id="answer" type="text" spellcheck="false" inputmode="text"
 aria-describedby="practice-feedback" placeholder="a number, or [0, 0; 2, 4]">
<div id="practice-choices" role="group" aria-labelledby="practice-prompt" hidden></div>
<button type="submit" id="check">check ⏎</button>
<button type="button" id="reveal" title="show this answer (it counts as shown)">show</button>
</form>
<div id="practice-feedback" aria-live="polite"></div>
<div id="practice-score" aria-live="polite" hidden></div>
</div>
"""

# The memory overlay is off until asked for; its key says what its outlines mean.
_MEMORY_TOGGLE = ('<button type="button" id="memory-toggle" aria-pressed="false" '
                  'aria-controls="memory" title="show the memory kept for backward (M)">'
                  "▦ memory</button>\n")
_MEMORY_KEY = """<div id="memory-key"><span class="key-held"></span> saved for backward, still
 kept <span class="key-freed"></span> freed</div>"""


def render_html(G: Any, path: str | os.PathLike, **options: Any) -> Path:
    """Write ``to_html(G, **options)`` to ``path`` whole or not at all; return the path
    (``G`` an IR graph or a root, as for ``to_html``)."""
    return write_atomically(path, to_html(G, **options).encode("utf-8"))


class Page:
    """A step-through page; in Jupyter it shows inline, in a frame of its own.

    ``diagram`` is the static picture offered beside it (the last step: every
    gradient drawn), for viewers that strip frames or scripts.
    """

    def __init__(self, html: str, height: int = 560, diagram: Any = None) -> None:
        self.html = html
        self.height = height
        self.diagram = diagram

    def __repr__(self) -> str:
        return f"<Page: {self.title()} ({len(self.html) // 1024} KiB of HTML)>"

    def title(self) -> str:
        """What the page steps through, as its <title> says."""
        start = self.html.find("<title>") + len("<title>")
        return unescape(self.html[start:self.html.find("</title>", start)])

    def _repr_html_(self) -> str:
        # srcdoc keeps the page's script and styles apart from the notebook's.
        return (f'<iframe srcdoc="{escape(self.html, quote=True)}" '
                f'style="width:100%;height:{self.height}px;border:0"></iframe>')

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """The page, the SVG of its last step for viewers that do not show the page
        (a notebook viewer that strips frames picks the image), and what it is."""
        bundle = {"text/html": self._repr_html_(), "text/plain": repr(self)}
        if self.diagram is not None:
            bundle["image/svg+xml"] = self.diagram.svg
        return bundle

    def render(self, path: str | os.PathLike) -> Path:
        """Write the page to ``path`` whole or not at all; return the path (as
        ``Diagram.render`` does; ``save`` is the same)."""
        return write_atomically(path, self.html.encode("utf-8"))

    save = render


def step_through(graph_or_root: Any, *, names: Any = None, height: int = 560,
                 rankdir: str = "LR", theme: str = "light", precision: int = 4,
                 practice: bool = False, **figure: Any) -> Page:
    """The step-through page of an IR graph or of a Value/Tensor root, as a Page
    (``practice``: the page that asks for the gradients); ``figure`` are draw's
    other options (``show_constants``...), for the picture offered beside the page."""
    G = as_graph(graph_or_root, names)
    page = {"rankdir": rankdir, "theme": theme, "precision": precision}
    with validated_once(G):  # (once, for the page and the picture)
        return Page(to_html(G, **page, practice=practice), height, draw(G, **page, **figure))
