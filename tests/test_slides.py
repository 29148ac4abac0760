"""Slide-ready figures: names on every box a student reads, constants without
gradients, contributions on their own edges, figures fitted to a frame, groups."""

from __future__ import annotations

import itertools
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from test_draw import _check_golden, contrast

from backpropviz import Tensor, Value
from backpropviz.crossings import count_crossings
from backpropviz.diagram import draw, step_diagrams
from backpropviz.errors import UsageError
from backpropviz.figure import to_dot
from backpropviz.fitting import SLIDE_NUMBER_PX
from backpropviz.folding import bands
from backpropviz.graphviz import run_dot
from backpropviz.ir import to_networkx
from backpropviz.layout import layout
from backpropviz.options import parse_frame
from backpropviz.style import THEMES

EXAMPLE_NAMES = sorted(path.stem for path in
                       (Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


def _svg_texts(svg: str) -> list[str]:
    return [re.sub(r"<[^>]*>", "", text) for text in re.findall(r"<text[^>]*>.*?</text>", svg)]


def test_a_number_bound_to_a_global_name_is_named(example):
    G = example("d2l_objective")
    constants = sorted((attrs["data"], attrs["label"] or "") for _, attrs in G.nodes(data=True)
                       if attrs.get("role") == "const")
    # y = 0 names its constant, lambd / 2 its 0.05 (drawn λ/2); the 2 of "/ 2" has none.
    assert constants == [(0.0, "y"), (0.05, "lambd/2"), (2.0, "")]


def test_a_literal_that_equals_a_global_number_is_not_named(tmp_path):
    from backpropviz.script import graph_of_script

    script = tmp_path / "two.py"
    script.write_text("from backpropviz import Value\nn = 2\nw = Value(3.0, requires_grad=True)\n"
                      "L = w * 2 + w * n\n")
    G = graph_of_script(script, quiet=True)
    constants = [attrs for _, attrs in G.nodes(data=True) if attrs.get("role") == "const"]
    # Both constants are 2.0, one written as a literal: neither can be told to be n.
    assert len(constants) == 2 and all(attrs["label"] is None for attrs in constants)


def test_constants_have_no_gradient_or_saved_mark_unless_asked(example):
    G = example("d2l_objective")
    constants = [node for node, role in G.nodes(data="role") if role == "const"]
    two = next(node for node in constants if G.nodes[node]["data"] == 2.0)
    assert G.nodes[two]["grad"] == -1.0 and G.nodes[two]["stored"]  # the engine's record
    plain = to_dot(G)
    shown = to_dot(G, show_constants=True)
    for dot in (plain, shown):
        line = _line(dot, two)
        assert ("has-grad" in line) == (dot is shown)
        assert ("●" in line) == (dot is shown)
        assert ("−1" in line) == (dot is shown)


def _headings(svg: str) -> list[str]:
    """Each value box's first line of text as it reads: its pieces (a name in
    italics, a subscript) joined, no-break spaces read as spaces."""
    root = ET.fromstring(svg)
    lines = []
    for group in root.iter(f"{SVG_NS}g"):
        if "value" not in (group.get("class") or "").split():
            continue
        texts = [t for t in group.iter(f"{SVG_NS}text") if t.text]
        if texts:
            top = min(float(t.get("y")) for t in texts)
            first = sorted((float(t.get("x")), t.text) for t in texts
                           if abs(float(t.get("y")) - top) < 6)
            line = "".join(text for _, text in first).replace("\xa0", " ")
            lines.append(line.replace("●", "").strip())  # (less the saved mark)
    return lines


def test_unnamed_values_are_headed_by_their_expression(example):
    svg = draw(example("d2l_objective")).svg
    headings = _headings(svg)
    for expression in ("o − y", "(o − y)²", "Σ(o − y)²"):
        assert expression in headings, expression
    texts = _svg_texts(svg)
    assert "o" in texts and "y" in texts  # named values keep their names


def test_expression_heads_use_the_names_on_the_boxes():
    a = Value(2.0, label="a")
    b = Value(-3.0, label="b")
    out = (a * b).tanh()
    out.backward()
    headings = _headings(draw(out).svg)
    assert "a·b" in headings and "tanh(a·b)" in headings


def test_expression_heads_set_indices_as_the_boxes_do(example):
    # W1 x + b1 is headed W₁x + b₁: the index a subscript, lower and smaller,
    # as in the box named W₁ (not the Python name W1).
    svg = draw(example("mlp3")).svg
    root = ET.fromstring(svg)
    for group in root.iter(f"{SVG_NS}g"):
        texts = [t for t in group.iter(f"{SVG_NS}text") if t.text]
        if "value" in (group.get("class") or "") and texts and texts[0].text == "W" \
                and any(t.text.strip() == "+" for t in texts):
            W, one = texts[0], texts[1]
            assert one.text == "1" and float(one.get("y")) > float(W.get("y"))
            assert float(one.get("font-size")) < float(W.get("font-size"))
            break
    else:
        raise AssertionError("no heading W1 x + b1")


def test_a_tensor_constant_is_drawn_without_gradient():
    W = Tensor([[1.0, 2.0]], requires_grad=True)
    L = (W * 3.0).sum()
    L.backward()
    dot = to_dot(to_networkx(L))
    assert 'class="value const"' in dot and "has-grad" not in _line(dot, "v1")
    assert "has-grad" in _line(to_dot(to_networkx(L), show_constants=True), "v1")


def _line(dot: str, node: str) -> str:
    """The DOT statement of ``node``."""
    return next(line for line in dot.splitlines() if line.startswith(f'  "{node}" ['))


# ---------------------------------------------------------------- contributions on their edges


def _bezier_samples(points: list[tuple[float, float]], per_segment: int = 24) -> np.ndarray:
    """Points along graphviz's cubic Bezier path (start, then 3 points a segment)."""
    p = np.asarray(points, dtype=float)
    samples = [p[0]]
    t = np.linspace(0, 1, per_segment)[1:, None]
    for i in range(0, len(p) - 3, 3):
        a, b, c, d = p[i], p[i + 1], p[i + 2], p[i + 3]
        samples.extend((1 - t) ** 3 * a + 3 * (1 - t) ** 2 * t * b + 3 * (1 - t) * t ** 2 * c
                       + t ** 3 * d)
    return np.asarray(samples)


@pytest.mark.parametrize("rankdir", ["LR", "RL", "TB", "BT"])
@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_contribution_is_nearest_its_own_edge(example, name, rankdir):
    G = example(name)
    drawn = layout(G, rankdir=rankdir)
    paths = {edge: _bezier_samples(path.points) for edge, path in drawn.edges.items()}
    labelled = 0
    for edge, path in drawn.edges.items():
        if path.label is None:
            continue
        labelled += 1
        centre = np.asarray(path.label)
        distance = {other: float(np.min(np.hypot(*(samples - centre).T)))
                    for other, samples in paths.items()}
        nearest = min(distance, key=distance.get)
        assert nearest == edge, (edge, nearest, distance[edge], distance[nearest])
    forks = sum(len([1 for _, _, g in G.out_edges(v, data="grad") if g is not None]) >= 2
                and G.nodes[v]["role"] != "const"
                for v, kind in G.nodes(data="kind") if kind == "value")
    assert (labelled > 0) == (forks > 0)


# ---------------------------------------------------------------- fitted to a slide

SVG_NS = "{http://www.w3.org/2000/svg}"
# The examples that are slide figures (the book's objective, a three-layer MLP
# and smaller) must be readable when fitted to 1920x1080; memory_growth's
# graph of 16x32 matrices is there for its memory chart, and says what helps.
NOT_SLIDES = {"memory_growth"}


def _text_px(svg: str, frame: tuple[int, int]) -> tuple[tuple[float, float], list]:
    """The picture's size in px, and each text's height in px once the picture is
    scaled into ``frame`` as a slide program would: (text, px, in a node, font)."""
    root = ET.fromstring(svg)
    width, height = (float(re.match(r"[0-9.]+", root.get(k)).group()) for k in ("width", "height"))
    box = [float(n) for n in root.get("viewBox").split()]
    graph = root.find(f"{SVG_NS}g")
    scale = float(re.search(r"scale\(([0-9.]+)", graph.get("transform")).group(1))
    into_frame = min(frame[0] / width, frame[1] / height) * width / box[2]
    in_nodes = {id(t) for g in root.iter(f"{SVG_NS}g") if "node" in (g.get("class") or "")
                for t in g.iter(f"{SVG_NS}text")}
    texts = [(t.text or "", float(t.get("font-size")) * scale * into_frame,
              id(t) in in_nodes, t.get("font-family"))
             for t in root.iter(f"{SVG_NS}text") if (t.text or "").strip()]
    return (width, height), texts


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_a_fitted_figure_fills_the_frame_with_slide_sized_text(example, name):
    frame = (1920, 1080)
    diagram = draw(example(name), fit="1920x1080")
    (width, height), texts = _text_px(diagram.svg, frame)
    # It fills the frame: one side is the frame's, the other fits inside it.
    assert width <= frame[0] + 0.5 and height <= frame[1] + 0.5
    assert max(width / frame[0], height / frame[1]) == pytest.approx(1, abs=0.002)
    # the numbers in the boxes and badges (the legend's key is other text)
    numbers = [(text, px) for text, px, in_node, font in texts
               if in_node and "Helvetica" in font
               and re.fullmatch(r"[−\-]?[0-9.e+−]+", text.strip())]
    others = [(text, px) for text, px, _, _ in texts if text.strip() != "●"]
    assert numbers and others
    # (the book's figures' numbers 28 px, a graph's of more numbers 22)
    assert diagram.fit.number_target == (22 if name in ("mlp3", "memory_growth") else 28)
    readable = (min(px for _, px in numbers) >= diagram.fit.number_target
                and min(px for _, px in others) >= diagram.fit.text_target)
    # measured here, as the fit reckoned it: too small to read is said, with advice
    assert readable == (diagram.fit.advice is None)
    if name not in NOT_SLIDES:
        assert min(px for _, px in numbers) >= 17.5, min(numbers, key=lambda item: item[1])
        assert min(px for _, px in others) >= 14, min(others, key=lambda item: item[1])


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_a_fitted_figure_is_no_smaller_and_crosses_no_more_than_the_graph_laid_out_whole(
        example, name):
    G = example(name)
    frame = (1920, 1080)
    whole = json.loads(run_dot(to_dot(G, frame=frame), "json"))
    diagram = draw(G, fit=frame)
    fitted = json.loads(run_dot(diagram.source, "json"))
    assert count_crossings(fitted) <= count_crossings(whole)

    def scale(data: dict) -> float:  # pixels of the frame per point of the drawing
        x0, y0, x1, y1 = map(float, data["bb"].split(","))
        pad = 2 * float(data["pad"]) * 72
        return min(frame[0] / (x1 - x0 + pad), frame[1] / (y1 - y0 + pad))
    assert scale(fitted) >= scale(whole) * 0.995
    # A folded figure's edges each stay in their row: one carried on to another
    # row ends at a mark named after the value it carries, and starts again at one.
    if diagram.fit.wrap != 1:
        row = bands(G, diagram.fit.wrap)
        names = {obj["_gvid"]: obj["name"] for obj in fitted["objects"] if "pos" in obj}
        ends = [(names[e["tail"]], names[e["head"]]) for e in fitted["edges"]]
        for tail, head in ends:
            assert not (tail in row and head in row and row[tail] != row[head]), (tail, head)
        marks = {obj["name"] for obj in fitted["objects"]
                 if "continuation" in obj.get("class", "")}
        assert marks
        for mark in marks:  # each mark where an edge leaves its row has its other end
            edge, end = mark.rsplit("/", 1)
            assert f"{edge}/{'from' if end == 'to' else 'to'}" in marks
            u, v = edge.rsplit("#", 1)[0].split("->")
            value = u if G.nodes[u]["kind"] == "value" else v
            label = G.nodes[value]["label"]
            if label:  # named as the figure names the value
                statement = re.search(rf'"{re.escape(mark)}" \[[^\n]*', diagram.source).group()
                assert f"<I>{re.sub(r'[0-9_]+$', '', label)}</I>" in statement, statement


def test_the_book_mlp_fitted_to_a_slide_has_lecture_hall_numbers(example):
    # Folded into rows it is some 50% larger than in one strip: 28 px numbers.
    diagram = draw(example("d2l_mlp"), fit="1920x1080")
    (_, _), texts = _text_px(diagram.svg, (1920, 1080))
    numbers = [px for text, px, in_node, font in texts
               if in_node and "Helvetica" in font and re.fullmatch(r"[−\-]?[0-9.]+", text.strip())]
    assert min(numbers) >= SLIDE_NUMBER_PX and diagram.fit.advice is None


def test_a_long_graph_is_folded_into_rows_in_reading_order(example):
    G = example("d2l_objective")
    diagram = draw(G, fit=(1920, 1080), rankdir="LR")
    assert diagram.fit.rankdir == "LR" and diagram.fit.wrap != 1
    placed = layout_of_source(diagram.source)
    label = {attrs["label"]: node for node, attrs in G.nodes(data=True) if attrs.get("label")}
    rows = bands(G, diagram.fit.wrap)
    heights: dict[int, list[float]] = {}
    for node, row in rows.items():
        heights.setdefault(row, []).append(placed[node][1])
    ordered = [heights[row] for row in sorted(heights)]
    # x and W1 start the first row (top left); J ends the last (bottom right).
    assert rows[label["x"]] == rows[label["W1"]] == 0 and rows[label["J"]] == len(ordered) - 1
    assert placed[label["W1"]][0] < placed[label["J"]][0]
    assert min(placed[label["x"]][0], placed[label["W1"]][0]) < min(
        placed[node][0] for node, row in rows.items() if row == 0) + 1
    # every row lies wholly above the next
    assert all(min(upper) > max(lower) for upper, lower in itertools.pairwise(ordered))


def layout_of_source(source: str) -> dict[str, tuple[float, float]]:
    """Node centres of a DOT source as graphviz lays it out (y up)."""
    from backpropviz.graphviz import run_dot

    data = json.loads(run_dot(source, "json"))
    return {obj["name"]: tuple(float(n) for n in obj["pos"].split(",")[:2])
            for obj in data["objects"] if "pos" in obj}


def test_every_step_of_a_fitted_figure_has_one_layout(example):
    G = example("d2l_objective")
    diagrams = step_diagrams(G, fit="1920x1080")
    first = layout_of_source(diagrams[0].source)
    for diagram in diagrams[1:]:
        assert layout_of_source(diagram.source) == first


def test_a_graph_too_big_for_the_frame_says_what_helps():
    x = Value(0.5, label="x")
    for _ in range(40):
        x = (x * 1.01).tanh()
    x.backward()
    diagram = draw(x, fit="1280x720")
    assert diagram.fit.number_px < 18
    assert "px tall" in diagram.fit.advice and "--compact" in diagram.fit.advice


@pytest.mark.parametrize("frame", ["1920", "axb", "0x100", "1920x1080x3"])
def test_a_frame_is_width_by_height(frame):
    with pytest.raises(UsageError, match="WIDTHxHEIGHT"):
        parse_frame(frame)


# ---------------------------------------------------------------- the book's figure


def test_the_book_layout_runs_from_the_lower_left_to_the_upper_right(example):
    G = example("d2l_figure")
    placed = {node: place for node, place in layout_of_source(to_dot(G, rankdir="book")).items()
              if node in G}  # (not the badges on the edges)
    label = {attrs["label"]: node for node, attrs in G.nodes(data=True) if attrs.get("label")}
    x, J = placed[label["x"]], placed[label["J"]]
    xs = [p[0] for p in placed.values()]
    ys = [p[1] for p in placed.values()]
    # the inputs in the lowest rank at the left, the objective highest at the right
    assert min(placed[label["W1"]][1], x[1]) == min(ys) and J[1] == max(ys)
    assert min(placed[label["W1"]][0], x[0]) < min(xs) + 150 and J[0] > max(xs) - 150
    # every op's result is above it and to its right, as in the book
    for op, kind in G.nodes(data="kind"):
        if kind == "op" and op in placed:
            (result,) = G.successors(op)
            assert placed[result][1] > placed[op][1] and placed[result][0] > placed[op][0]
    # wide, as the book's figure is, and no edge crosses another
    assert max(xs) - min(xs) > max(ys) - min(ys)
    assert count_crossings(json.loads(run_dot(to_dot(G, rankdir="book"), "json"))) == 0


def test_symbolic_draws_names_only(example):
    G = example("d2l_figure")
    diagram = draw(G, rankdir="book", symbolic=True)
    texts = _svg_texts(diagram.svg)
    assert not [t for t in texts if re.fullmatch(r"[−\-]?[0-9.]+", t) and t not in "12"]
    # (1 and 2 are W₁'s and W₂'s subscripts) the book's names and operators are there
    for name in ("x", "W", "z", "h", "o", "y", "L", "s", "J", "l", "@", "+", "ReLU"):
        assert name in texts, name
    assert "●" not in texts and "saved for backward" not in diagram.svg


def test_the_book_figure_matches_its_golden_file(example):
    G = example("d2l_figure")
    _check_golden("d2l_figure-book-symbolic.dot", to_dot(G, rankdir="book", symbolic=True))
    # the figure's operators: the book's six, the loss and the penalty each one
    ops_drawn = sorted(line.split('label="')[1].split('"')[0] if 'label="' in line else "group"
                       for line in to_dot(G).splitlines() if 'class="op ' in line)
    assert len(ops_drawn) == 6


# ---------------------------------------------------------------- on a slide's own colour


def _slide_colour(theme) -> str:
    """The colour a theme is drawn on: its background, or for a transparent theme
    the slide colour it is made for."""
    return theme.label_fill if theme.background == "transparent" else theme.background


@pytest.mark.parametrize("theme", ["transparent", "transparent-dark"])
def test_a_transparent_theme_fills_nothing_behind_labels_or_the_legend(example, theme):
    svg = draw(example("d2l_objective"), theme=theme).svg
    root = ET.fromstring(svg)
    graph = root.find(f"{SVG_NS}g")
    filled = []
    for group in graph:
        kind = (group.get("class") or "").split()[:1]
        inside_box = kind == ["node"] and "badge" not in group.get("class")
        if inside_box or kind == ["edge"]:
            continue  # a value's box and an op's circle are filled, as on any slide
        for shape in group.iter():
            if shape.tag.removeprefix(SVG_NS) in ("polygon", "path", "rect", "ellipse"):
                fill = shape.get("fill", "none")
                # (the legend's samples: a parameter's fill, a dead unit's)
                samples = (THEMES[theme].dead_fill, THEMES[theme].param_fill)
                if fill not in ("none", "transparent", *samples):
                    filled.append((group.get("id") or group.get("class"), fill))
    assert filled == []
    # the legend and a badge are there, unfilled
    assert "saved for backward" in svg and 'class="node badge' in svg


@pytest.mark.parametrize("theme", ["light", "dark", "transparent", "transparent-dark"])
def test_edges_and_outlines_stand_out_from_the_slide(example, theme):
    palette = THEMES[theme]
    slide = _slide_colour(palette)
    svg = draw(example("d2l_objective"), theme=theme).svg
    strokes = set(re.findall(r'<path fill="none" stroke="(#[0-9a-f]{6})"', svg))
    assert palette.edge in strokes
    # WCAG's 3:1 for lines and shapes that carry meaning
    for colour in (palette.edge, palette.node_line, palette.op_line, palette.grad):
        assert contrast(colour, slide) >= 3, (theme, colour, slide)


def test_subscripts_and_legend_gaps_survive_other_renderers(example):
    svg = draw(example("d2l_objective")).svg
    assert "baseline-shift" not in svg  # cairosvg ignores it: the subscript is set lower
    texts = re.findall(r'<text[^>]*y="(-?[0-9.]+)"[^>]*font-size="([0-9.]+)"[^>]*>([^<]*)</text>',
                       svg)
    base = next((float(y), float(size)) for y, size, text in texts if text == "W")
    subscript = next((float(y), float(size)) for y, size, text in texts if text == "1"
                     and abs(float(y) - base[0]) < 10)
    assert subscript[0] > base[0] and subscript[1] < base[1]  # lower, smaller
    # a leading space before words is dropped by Chromium and cairosvg
    assert not [text for _, _, text in texts if text.startswith(" ") and text.strip()]


def test_fitted_steps_are_sized_in_pixels_of_the_frame(example):
    diagrams = step_diagrams(example("d2l_objective"), fit="1280x720")
    sizes = {re.search(r'<svg width="([0-9.]+)px" height="([0-9.]+)px"', d.svg).groups()
             for d in diagrams}
    assert len(sizes) == 1
    (width, height), = sizes
    assert float(width) <= 1280.5 and float(height) <= 720.5


def test_another_engines_unnamed_weights_keep_their_gradients(tmp_path):
    from backpropviz.script import graph_of_script

    script = tmp_path / "mine.py"
    script.write_text(
        "class V:\n"
        "    def __init__(self, data, children=()):\n"
        "        self.data, self.grad, self._prev = data, 0.0, tuple(children)\n"
        "        self._backward, self._op = (lambda: None), ''\n"
        "    def __mul__(self, other):\n"
        "        out = V(self.data * other.data, (self, other)); out._op = '*'\n"
        "        def _backward():\n"
        "            self.grad += other.data * out.grad\n"
        "            other.grad += self.data * out.grad\n"
        "        out._backward = _backward\n"
        "        return out\n"
        "    def backward(self):\n"
        "        self.grad = 1.0\n"
        "        for node in (self,):\n"
        "            node._backward()\n"
        "weights = [V(3.0)]\n"
        "x = V(2.0)\n"
        "out = weights[0] * x\n"
        "out.backward()\n")
    G = graph_of_script(script, quiet=True)
    (weight,) = [node for node, attrs in G.nodes(data=True) if attrs.get("data") == 3.0]
    assert G.nodes[weight]["role"] != "const" and G.nodes[weight]["grad"] == 2.0
    assert "has-grad" in _line(to_dot(G), weight)
