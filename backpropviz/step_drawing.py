"""Every step picture of a backward pass from one layout and one graphviz run.

The step pictures share one layout (dot.Writer sizes every slot for every
number it will hold), so each node and edge has only a few looks over the pass:
pending, then each running sum, highlighted or not. A step is given as the
step before with the statements of what it may change (dot.Writer.changes), so
no step's DOT is written whole but step 0's. Here each look is drawn
once: the step-0 picture is laid out once; then one graph holding every look
of every node and edge, each pinned where the layout put it, is drawn by
``neato -n2`` in one run; its SVG is cut into those looks, and step k is the
step-0 picture with each node and edge in its look at step k.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import unescape

from .graphviz import run_dot

__all__ = ["StepDrawing", "draw_steps"]


# One statement of dot.Writer's DOT per line: a node ("name" [...]) or an edge
# ("u" -> "v" [...]), each with its id first.
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_STATEMENT = re.compile(rf'^\s*({_QUOTED})(?: -> ({_QUOTED}))? \[id=({_QUOTED})(.*)\];$')
_ATTRS = re.compile(rf'^.*? \[id={_QUOTED}(.*)\];$')
_POS = re.compile(r' pos="[^"]*"')
_GRAPH_LINE = "  graph ["
# The graph label's looks are drawn as nodes of this name (never an IR node's: ids are v3, op2).
_LABEL = "bpv-label"
_CORNER = "bpv-corner-"
_POINT_INCHES = 0.0003  # (graphviz's smallest point)
_SEP = "~"  # a look's node or edge is named after its own, with ~ and its number
_ARROW_LENGTH = 10.0  # graphviz's, in points, times the arrowsize


@dataclass
class StepDrawing:
    """The step pictures as looks: ``head`` (the SVG up to the graph's group), the
    graph group's ``classes`` at each step, ``order`` (the ids of its nodes and
    edges, in drawing order), ``looks`` (each id's looks, the SVG text of each
    group), ``at[k][id]`` (which look step k shows), ``labels`` (the graph label's
    SVG text at each step) and ``tail``."""

    head: str
    classes: list[str]
    order: list[str]
    looks: dict[str, list[str]]
    at: list[dict[str, int]]
    labels: list[str]
    background: str
    tail: str
    size: tuple[float, float] = (0.0, 0.0)  # the layout's, in points, with its pad

    def svg(self, step: int) -> str:
        """Step ``step``'s picture, as graphviz would draw it on its own."""
        parts = [self.head, f'<g id="graph" class="{self.classes[step]}"'
                 f"{self.background}", self.labels[step]]
        chosen = self.at[step]
        parts.extend(self.looks[gid][chosen[gid]] for gid in self.order)
        parts.append(self.tail)
        return "".join(parts)


# The end of an invisible edge's line (dot.Writer's, from untangling's hints).
_UNSEEN_EDGE = '[style="invis" weight="0"];'


def _statement(line: str) -> tuple[str, str, str | None] | None:
    """A statement of dot.Writer's DOT as ``(id, text, head)``: its text without its
    place, and the head of an edge (None for a node); None for any other line."""
    match = _STATEMENT.match(line)
    if match is None:
        return None
    quoted = match.group(3)  # (an id with no escape in it is its text between the quotes)
    gid = json.loads(quoted) if "\\" in quoted else quoted[1:-1]
    return gid, _POS.sub("", line) if " pos=" in line else line, match.group(2)


def _parsed(source: str) -> tuple[list[str], list[tuple[str, str, str | None]]]:
    """A step's DOT as its graph header lines and its statements ``(id, text, head)``;
    any other line (a cluster, a rank) is kept as ``("", line, None)``."""
    lines = source.splitlines()
    header, statements = [], []
    for line in lines[1:-1]:
        if line.endswith(_UNSEEN_EDGE):
            continue  # (how untangling.py told dot to lay out: pinned, it is not wanted)
        statement = _statement(line)
        if statement is None:
            if line.startswith(("  graph [", "  node [", "  edge [")) and not statements:
                header.append(line)
            else:
                statements.append(("", line, None))
            continue
        statements.append(statement)
    return header, statements


def draw_steps(first: str, later: Sequence[tuple[str, Sequence[str]]]) -> StepDrawing | None:
    """The step pictures of a pass from one layout and one drawing: ``first`` is the DOT
    of step 0 (dot.Writer's), ``later`` each later step's graph line and the lines of
    its DOT that may differ from the step's before (Writer.changes). None if they
    cannot be drawn so (clusters, or labels placed after the layout), for the caller
    to draw each."""
    first_header, statements = _parsed(first)
    keys = [gid for gid, _, _ in statements]
    if "" in keys:
        return None
    looks: dict[str, list[str]] = {gid: [text] for gid, text, _ in statements}
    at: list[dict[str, int]] = [dict.fromkeys(keys, 0)]
    graph_lines = [first_header[0]]
    for graph_line, lines in later:  # each step: the one before, with what changed
        chosen = dict(at[-1])
        for line in lines:
            statement = None if line.endswith(_UNSEEN_EDGE) else _statement(line)
            if statement is None or statement[0] not in looks:
                return None
            gid, text, _ = statement
            versions = looks[gid]
            if text not in versions:
                versions.append(text)
            chosen[gid] = versions.index(text)
        at.append(chosen)
        graph_lines.append(graph_line)
    layout = json.loads(run_dot(first, "json"))
    x0, y0, x1, y1 = (float(n) for n in layout["bb"].split(","))

    places = {obj["name"]: _shifted(obj["pos"], x0, y0)
              for obj in layout.get("objects", []) if "pos" in obj}
    # (each node's half width and height, in points: where an edge laid out to a
    # node's middle stops once the node shows)
    halves = {obj["name"]: (36 * float(obj["width"]), 36 * float(obj["height"]))
              for obj in layout.get("objects", []) if "width" in obj}
    routes = {edge["id"]: _shifted(edge["pos"], x0, y0) for edge in layout.get("edges", [])
              if "pos" in edge and "id" in edge}
    # (a large graph's edges have their labels placed after the layout: xlabel)
    beside = {edge["id"]: _shifted(edge["xlp"], x0, y0)
              for edge in layout.get("edges", []) if "xlp" in edge}
    edge_font = " ".join(re.findall(r' (?:fontname|fontsize)="[^"]*"', first_header[-1]))
    external: dict[str, int] = {}  # each look with a label beside it: the node drawing it
    label_looks: list[str] = []
    label_at = []
    for line in graph_lines:
        label = _label_of(line)
        if label not in label_looks:
            label_looks.append(label)
        label_at.append(label_looks.index(label))
    heads = {gid: head for gid, _, head in statements}
    size = re.search(r' arrowsize="([0-9.]+)"', first_header[-1])
    arrowsize = float(size.group(1)) if size else 1.0
    lines = ["digraph backprop {",
             _GRAPH_LINE + 'layout="neato" splines="true" ' + _without_label(graph_lines[0]),
             *first_header[1:]]
    edges = []
    for gid in keys:
        pos = routes.get(gid) if heads[gid] is not None else places.get(gid)
        if pos is None:
            return None
        for number, text in enumerate(looks[gid]):
            name = json.dumps(gid if number == 0 else f"{gid}{_SEP}{number}")
            if heads[gid] is None:
                lines.append(f"  {name} [id={name}{_ATTRS.match(text).group(1)} pos=\"{pos}!\"];")
            else:
                start = text.index(" [id=")
                # an arrow at its start too: the curve starts an arrow further on
                route = (_clipped(pos, _ARROW_LENGTH * arrowsize) if ' dir="both"' in text
                         else pos)
                # a piece laid out into an unseen badge's middle stops at its edge once it
                # shows (dot.Writer: before, it runs on through)
                for end, clip in ((-1, ' headclip="false"'), (0, ' tailclip="false"')):
                    if clip in looks[gid][0]:
                        node = json.loads(heads[gid] if end else text[:start].split(" -> ")[0])
                        route = (_met(route, places[node], end) if clip in text
                                 else _stopped(route, places[node], halves[node], end))
                attrs = _ATTRS.match(text).group(1)
                if " xlabel=<" in attrs:  # drawn as a node where the layout put it
                    if gid not in beside:
                        return None
                    attrs, html = _without_html(attrs, "xlabel")
                    label = json.dumps(f"{gid}{_SEP}{number}{_SEP}x")
                    lines.append(f"  {label} [id={label} shape=\"plain\"{edge_font} "
                                 f'label=<{html}> pos="{beside[gid]}!"];')
                    external[f"{gid}{_SEP}{number}"] = 1
                edges.append(f'{text[:start]} [id={name}{attrs} pos="{route}"];')
    # Two unseen points at the layout's corners: the drawing keeps the layout's size,
    # the room of its label (drawn as the layout drew it, below) included.
    half = _POINT_INCHES * 36
    for name, x, y in (("ll", half, half), ("ur", x1 - x0 - half, y1 - y0 - half)):
        lines.append(f'  "{_CORNER}{name}" [shape="point" style="invis" '
                     f'width="{_POINT_INCHES}" pos="{x:.4f},{y:.4f}!"];')
    lines.extend(edges)
    lines.append("}")
    if label_looks != [""]:
        # The graph label's looks, as nodes of a graph of their own (in the same run)
        font = re.search(r' fontname="([^"]*)"', graph_lines[0])
        lines.append("digraph labels {")
        lines.append('  graph [layout="neato"];')
        lines.append(f'  node [shape="plain" fontname="{font.group(1) if font else "Times"}"];')
        lines.extend(f'  "{_LABEL}{_SEP}{number}" [id="{_LABEL}{_SEP}{number}" label=<{label}> '
                     'pos="0,0!"];' for number, label in enumerate(label_looks))
        lines.append("}")
    svg = run_dot("\n".join(lines) + "\n", "svg").decode("utf-8")
    pictures = svg.split("</svg>\n")
    label_place = None
    if label_looks != [""]:
        # where the layout set the label's first text (graphviz's SVG has y downwards)
        first_text = next(op["pt"] for op in layout["_ldraw_"] if "text" in op)  # (xdot's text ops)
        label_place = (first_text[0] - x0, -(first_text[1] - y0))
    drawing = _cut(pictures[0] + "</svg>\n", pictures[1] if len(pictures) > 2 else "",
                   label_place, keys, looks, at, label_at, graph_lines, external)
    pad = 2 * float(layout.get("pad", 0.25)) * 72
    drawing.size = (x1 - x0 + pad, y1 - y0 + pad)
    return drawing


def _clipped(route: str, length: float) -> str:
    """An edge's route (graphviz's ``pos``) with an arrow at its start: the curve
    begins ``length`` points further on, as graphviz clips it (within its half a point)."""
    parts = route.split()
    ends = [part for part in parts if part[:2] in ("e,", "s,")]
    points = [tuple(float(n) for n in part.split(",")) for part in parts
              if part[:2] not in ("e,", "s,")]
    start = points[0]
    if len(points) > 4 and math.dist(start, points[3]) < length:
        points = points[3:]  # (graphviz drops a first piece shorter than the arrow)
    low, high = 0.0, 1.0
    for _ in range(40):  # where the first piece leaves the arrow's circle
        middle = (low + high) / 2
        if math.dist(_bezier(points[:4], middle), start) <= length:
            low = middle
        else:
            high = middle
    points[:4] = _right_part(points[:4], high)
    return " ".join([f"s,{start[0]:.2f},{start[1]:.2f}", *ends,
                     *(f"{x:.2f},{y:.2f}" for x, y in points)])


def _stopped(route: str, centre: str, half: tuple[float, float], end: int) -> str:
    """An edge's route (graphviz's ``pos``) laid out to a node's ``centre``, stopped where
    it meets the node's box (``half`` its half width and height) at its ``end`` (-1 its
    last point, 0 its first), as graphviz clips an edge at a node's edge."""
    cx, cy = (float(n) for n in centre.rstrip("!").split(","))
    parts = route.split()
    ends = [part for part in parts if part[:2] in ("e,", "s,")]
    points = [tuple(float(n) for n in part.split(",")) for part in parts
              if part[:2] not in ("e,", "s,")]

    def inside(point: tuple[float, float]) -> bool:
        return abs(point[0] - cx) <= half[0] and abs(point[1] - cy) <= half[1]

    piece = points[-4:] if end else points[:4]
    if not end:
        piece = piece[::-1]  # (from the node's middle outwards, as the last piece runs)
    low, high = 0.0, 1.0  # where the piece, run towards the middle, enters the box
    for _ in range(40):
        middle = (low + high) / 2
        if inside(_bezier(piece, middle)):
            high = middle
        else:
            low = middle
    kept = _left_part(piece, low)
    if end:
        points[-4:] = kept
    else:
        points[:4] = kept[::-1]
    return " ".join([*ends, *(f"{x:.2f},{y:.2f}" for x, y in points)])


def _met(route: str, centre: str, end: int) -> str:
    """An edge's route laid out to a node's middle, its ``end`` point moved onto the
    middle itself (graphviz leaves it a point short, on the side it comes from): the two
    pieces of an edge through an unseen badge meet there, one line."""
    parts = route.split()
    at = max(i for i, part in enumerate(parts) if part[:2] not in ("e,", "s,")) if end \
        else min(i for i, part in enumerate(parts) if part[:2] not in ("e,", "s,"))
    parts[at] = centre.rstrip("!")
    return " ".join(parts)


def _left_part(points: Sequence[tuple[float, float]], t: float) -> list[tuple[float, float]]:
    """The part of a cubic Bézier piece from its start to ``t``."""
    return _right_part(points[::-1], 1 - t)[::-1]


def _shifted(pos: str, x0: float, y0: float) -> str:
    """A place of a layout (graphviz's ``pos``: a point, or an edge's points) with the
    layout's lower left corner, (x0, y0), moved to 0,0. graphviz writes a coordinate past
    100,000 points with an exponent (``1.9014e+05``); it is written back in full, as
    graphviz reads a pinned place (the page of an RNN unrolled 60 steps failed, its
    exponent read as a number of its own and left as ``1.9014e+5.00``)."""
    return _PAIR.sub(lambda m: f"{float(m.group(1)) - x0:.2f},{float(m.group(2)) - y0:.2f}",
                     pos)


def _bezier(points: Sequence[tuple[float, float]], t: float) -> tuple[float, float]:
    return _right_part(points, t)[0]


def _right_part(points: Sequence[tuple[float, float]], t: float) -> list[tuple[float, float]]:
    """The part of a cubic Bézier piece from ``t`` to its end (de Casteljau)."""
    a, b, c, d = points
    def mix(p: tuple[float, float], q: tuple[float, float]) -> tuple[float, float]:
        return (p[0] + (q[0] - p[0]) * t, p[1] + (q[1] - p[1]) * t)
    ab, bc, cd = mix(a, b), mix(b, c), mix(c, d)
    abc, bcd = mix(ab, bc), mix(bc, cd)
    return [mix(abc, bcd), bcd, cd, d]


def _without_html(attrs: str, name: str) -> tuple[str, str]:
    """Statement attributes without the HTML-like one ``name`` (<...>), and its HTML."""
    start = attrs.index(f" {name}=<")
    depth, end = 0, len(attrs)
    for bracket in _BRACKET.finditer(attrs, start + len(name) + 2):  # (to the one closing it)
        depth += 1 if bracket.group() == "<" else -1
        if depth == 0:
            end = bracket.start()
            break
    return attrs[:start] + attrs[end + 1:], attrs[start + len(name) + 3:end]


_BRACKET = re.compile("[<>]")


def _without_label(graph_line: str) -> str:
    """A graph line's attributes and its end, without its label (drawn apart)."""
    rest = graph_line[len(_GRAPH_LINE):]
    start = rest.find(" label=<")
    if start < 0:
        return rest
    return rest[:start] + rest[rest.rfind("> labelloc=") + 1:]


def _label_of(graph_line: str) -> str:
    """The HTML of a graph line's label (the step's caption band and the legend)."""
    start = graph_line.find(" label=<")
    if start < 0:
        return ""
    end = graph_line.rfind("> labelloc=")
    return graph_line[start + len(" label=<"):end]


_GROUP = re.compile(r'<!-- .*? -->\n<g id="([^"]*)" class="([^"]*)">\n')


def _cut(svg: str, label_svg: str, label_place: tuple[float, float] | None,
         keys: list[str], looks: dict[str, list[str]], at: list[dict[str, int]],
         label_at: list[int], graph_lines: list[str],
         external: dict[str, int]) -> StepDrawing:
    """The drawing of every look cut out of graphviz's SVG (see StepDrawing);
    ``label_svg`` draws the graph label's looks, if it has more than one."""
    start = svg.index('<g id="graph"')
    open_end = svg.index(">", start) + 1
    graph_class = re.search(r' class="([^"]*)"', svg[start:open_end]).group(1)
    background_end = svg.index("\n", svg.index("<polygon", open_end)) + 1
    background = svg[start + len('<g id="graph" class="') + len(graph_class) + 1:background_end]
    body_end = svg.rindex("</g>\n</svg>")
    found = _groups(svg, background_end, body_end)
    rendered = {gid: [_renamed(_with_beside(found, gid, n, f"{gid}{_SEP}{n}" in external),
                               gid, n)
                      for n in range(len(looks[gid]))] for gid in keys}
    labels = [""]
    if label_place is not None:
        drawn = _groups(label_svg, 0, len(label_svg))
        inner = [_label_drawing(drawn[f"{_LABEL}{_SEP}{n}"]) for n in range(len(drawn))]
        # graphviz draws a graph label as it draws a node's, moved to where the label goes
        here = _first_point(inner[0])
        labels = [_moved(text, label_place[0] - here[0], label_place[1] - here[1])
                  for text in inner]
    order = [gid for gid in found if gid in rendered]
    own = [re.search(r' class="([^"]*)"', line).group(1) for line in graph_lines]
    # graphviz's class for the graph group: "graph", then the DOT's, escaped as it escapes
    classes = [graph_class.replace(_xml(own[0]), _xml(mine)) for mine in own]
    return StepDrawing(svg[:start], classes, order, rendered, at,
                       [labels[n] for n in label_at], background, svg[body_end:])


def _with_beside(found: dict[str, str], gid: str, number: int, beside: bool) -> str:
    """Look ``number`` of ``gid``'s group, with the label beside it (drawn as a node)
    inside, where graphviz draws an edge's label: after the edge."""
    group = found[gid if number == 0 else f"{gid}{_SEP}{number}"]
    if not beside:
        return group
    label = _label_drawing(found[f"{gid}{_SEP}{number}{_SEP}x"])
    end = group.rindex("</g>")
    return group[:end] + label + group[end:]


def _groups(svg: str, start: int, end: int) -> dict[str, str]:
    """The top-level <g> of each node and edge between ``start`` and ``end``, by id,
    in drawing order, each with the comment graphviz writes before it."""
    found: dict[str, str] = {}
    position = start
    while True:
        match = _GROUP.search(svg, position, end)
        if match is None:
            return found
        close = _group_end(svg, match.end())
        found[unescape(match.group(1))] = svg[match.start():close]
        position = close


_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?"  # (graphviz: 1.9014e+05)
_PAIR = re.compile(rf"({_NUMBER}),({_NUMBER})")
_COORDINATE = re.compile(rf'( (?:x|y|cx|cy)=")({_NUMBER})"|( (?:points|d)=")([^"]*)"')


def _first_point(svg: str) -> tuple[float, float]:
    """The first text's place in a drawing (every label has one)."""
    match = re.search(rf'<text [^>]*?x="({_NUMBER})" y="({_NUMBER})"', svg)
    return float(match.group(1)), float(match.group(2))


def _moved(svg: str, dx: float, dy: float) -> str:
    """A drawing moved by (dx, dy), its numbers written as graphviz writes them."""
    def number(value: float) -> str:
        text = f"{value:.2f}".rstrip("0").rstrip(".")
        return "0" if text == "-0" else text

    def pair(match: re.Match) -> str:
        return f"{number(float(match.group(1)) + dx)},{number(float(match.group(2)) + dy)}"

    def coordinate(match: re.Match) -> str:
        if match.group(1):
            axis = match.group(1).strip()[:-2].lstrip("c")
            return f'{match.group(1)}{number(float(match.group(2)) + (dx if axis == "x" else dy))}"'
        return f'{match.group(3)}{_PAIR.sub(pair, match.group(4))}"'
    return _COORDINATE.sub(coordinate, svg)


def _group_end(text: str, position: int) -> int:
    """Where the <g> opened just before ``position`` ends (after its </g> line)."""
    depth = 1
    for match in re.compile(r"<g\b|</g>").finditer(text, position):
        depth += 1 if match.group(0) == "<g" else -1
        if depth == 0:
            return match.end() + 1
    raise ValueError("an unclosed <g> in graphviz's SVG")


def _renamed(group: str, gid: str, number: int) -> str:
    """A look's group named as its node or edge is (the look's own name taken off)."""
    if number == 0:
        return group
    own = f"{gid}{_SEP}{number}"
    comment_end = group.index("-->") + 4
    rest = group[comment_end:].replace(f'<g id="{_xml(own)}"', f'<g id="{_xml(gid)}"', 1)
    rest = rest.replace(f"<title>{_xml(own)}</title>", f"<title>{_xml(gid)}</title>", 1)
    return f"<!-- {_xml(gid)} -->\n" + rest


def _label_drawing(group: str) -> str:
    """A label look's drawing, as graphviz draws a graph label: straight into the graph."""
    inner = group[group.index("</title>\n") + len("</title>\n"):]
    return inner[:inner.rindex("</g>")]


def _xml(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("-", "&#45;"))
