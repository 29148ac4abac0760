"""The static step views (--steps, to_dot(step=k)): each carries its caption band,
with the engine's numbers, and shows the gradient flowing back on its edges."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest

from backpropviz.diagram import step_diagrams
from backpropviz.figure import to_dot
from backpropviz.html import to_html
from backpropviz.metrics import text_width
from backpropviz.style import THEMES
from tests.test_slides import layout_of_source

SVG = "{http://www.w3.org/2000/svg}"


def _texts(svg: str) -> list[str]:
    """The picture's texts as they read: the runs graphviz sets one after another on
    a line (an equation's typeset names, its subscripts) joined; a run that starts
    more than an em past where the one before it ends (equations set side by side)
    begins a text of its own."""
    lines: list[str] = []
    left = right = float("inf")  # where the run before starts and ends
    for text in ET.fromstring(svg).iter(f"{SVG}text"):
        x, run = float(text.get("x")), "".join(text.itertext()).replace("\xa0", " ")
        size = float(text.get("font-size"))
        start = text.get("text-anchor") == "start"
        if start and left < x <= right + size:
            lines[-1] += run
        else:
            lines.append(run)
        face = "serif" if "Times" in (text.get("font-family") or "") else "sans"
        left, right = (x, x + text_width(run, size, face)) if start else (float("inf"),) * 2
    return lines


def test_each_step_svg_carries_its_caption_with_numbers(example):
    # SEED.md: e = (a + b) c at a = 2, b = 1, c = −3.
    diagrams = step_diagrams(example("add_mul"))
    assert len(diagrams) == 3
    seed, multiply, add = (_texts(diagram.svg) for diagram in diagrams)
    assert any(text.startswith("step 0 of 2  backward starts at e") for text in seed)
    assert "∂e/∂e = 1" in seed
    assert any(text.startswith("step 1 of 2  a product gives") for text in multiply)
    assert "∂e/∂d = c · ∂e/∂e = (−3) · 1 = −3" in multiply
    assert "∂e/∂c = d · ∂e/∂e = 3 · 1 = 3" in multiply
    assert "∂e/∂a = ∂e/∂d = −3" in add and "∂e/∂d = c · ∂e/∂e = (−3) · 1 = −3" not in add
    # The key to the highlight is in every step after the seed.
    assert all(any("sends back" in text for text in _texts(d.svg)) for d in diagrams[1:])


def test_a_single_step_drawing_carries_the_same_band(example):
    G = example("add_mul")
    worked = "(−3)&#160;·&#160;1&#160;=&#160;−3"  # (spaces kept as graphviz sets them)
    assert worked in to_dot(G, step=1)
    assert worked not in to_dot(G)  # the final picture has no step
    assert "step 1 of" not in to_dot(G, step=1, legend=False)


def test_the_band_keeps_one_layout_for_every_step(example):
    # Captions of different lengths (one line at the seed, three at a fork) must
    # not move a box: every band is as large as the largest.
    diagrams = step_diagrams(example("d2l_objective"))
    first = layout_of_source(diagrams[0].source)
    for diagram in diagrams[1:]:
        assert layout_of_source(diagram.source) == first


def _arrowheads(svg: str) -> dict[str, list[str]]:
    """Each edge group's arrowhead fills, by the edge's id."""
    heads = {}
    for group in ET.fromstring(svg).iter(f"{SVG}g"):
        if "edge" in (group.get("class") or "").split():
            heads[group.get("id")] = [polygon.get("fill")
                                      for polygon in group.iter(f"{SVG}polygon")]
    return heads


def test_the_gradient_flows_back_in_blue_on_the_steps_edges(example):
    G = example("add_mul")
    theme = THEMES["light"]
    diagrams = step_diagrams(G)
    for k, diagram in enumerate(diagrams):
        heads = _arrowheads(diagram.svg)
        current = {edge_id for edge_id in heads
                   if re.search(r"\bcurrent\b", _class_of(diagram.svg, edge_id))}
        for edge_id, fills in heads.items():
            backward = theme.grad in fills
            operand_of_step = edge_id in current and "->op" in edge_id
            # A blue arrowhead (pointing into the operand) exactly on the step's
            # operand edges; the orange one still points forward into the op.
            assert backward == operand_of_step, (k, edge_id, fills)
            if backward:
                assert theme.highlight_line in fills
        assert (k == 0) == (not any(theme.grad in fills for fills in heads.values()))


def _class_of(svg: str, element_id: str) -> str:
    for group in ET.fromstring(svg).iter(f"{SVG}g"):
        if group.get("id") == element_id:
            return group.get("class") or ""
    return ""


def test_the_page_sets_the_caption_beside_the_picture_not_in_it(example):
    page = to_html(example("add_mul"))
    assert "step 1 of 2" not in page


def test_the_band_leaves_the_legend_its_own_spacing(example):
    from backpropviz.diagram import draw

    def gap(svg: str) -> float:
        found = dict((text, float(x)) for x, text in re.findall(
            r'<text[^>]*x="([\d.]+)"[^>]*>(value|gradient)</text>', svg))
        return found["gradient"] - found["value"]

    for name in ("add_mul", "d2l_objective"):
        G = example(name)
        assert gap(draw(G, step=1).svg) == pytest.approx(gap(draw(G).svg), abs=20)


def test_a_step_sends_no_blue_arrow_into_a_constant():
    # L = (x * 2) ** 2: at the × step the gradient goes back to x, not to the 2,
    # which is drawn without a gradient.
    from backpropviz import Value
    from backpropviz.figure import to_dot
    from backpropviz.ir import to_networkx

    x = Value(3.0, label="x")
    L = (x * 2.0) ** 2
    L.backward()
    G = to_networkx(L)
    const = next(n for n, role in G.nodes(data="role") if role == "const")
    x_node = next(n for n, label in G.nodes(data="label") if label == "x")
    times = next(n for n, op in G.nodes(data="op") if op == "mul")
    step = G.graph["backward_order"].index(times) + 1
    dot = to_dot(G, step=step)
    into = [line for line in dot.splitlines() if line.strip().startswith(f'"{const}" -> ')]
    from_x = [line for line in dot.splitlines() if line.strip().startswith(f'"{x_node}" -> ')]
    assert into and all('arrowtail' not in line for line in into)
    assert any('arrowtail="normal"' in line for line in from_x)


@pytest.mark.parametrize(("name", "fit"), [("d2l_mlp", None), ("d2l_objective", None),
                                         ("mlp3", None), ("d2l_figure", "1920x1080"),
                                         ("d2l_objective", "1920x1080")])
def test_a_step_build_keeps_its_key_and_legend_in_place(example, name, fit):
    # Slide after slide, what does not change (the key to the highlight, the
    # legend, the picture's size, every box's outline) stays at the same pixels: a
    # build does not flicker, fitted to a slide too.
    keys = ("value", "parameter", "gradient", "this step", "◀ blue")
    seen = set()
    for diagram in step_diagrams(example(name), fit=fit):
        texts = re.findall(r'<text[^>]*x="([0-9.\-]+)" y="([0-9.\-]+)"[^>]*>([^<]*)</text>',
                           diagram.svg)
        placed = tuple(sorted((text.strip(), x, y) for x, y, text in texts
                              if text.strip() in keys))
        assert len(placed) >= 4
        outlines = tuple(re.findall(r'<g id="([^"]+)" class="node value[^"]*">\n<title>[^<]*'
                                    r'</title>\n<path [^>]*? d="([^"]+)"', diagram.svg))
        assert outlines
        seen.add((re.search(r'viewBox="([^"]+)"', diagram.svg).group(1), placed, outlines))
    assert len(seen) == 1, [len(part) for part in seen]


def test_arrays_in_a_steps_equations_are_typeset_in_brackets_as_the_boxes_are(example):
    # The last step of the book's MLP: ∂L/∂W1 = ∂L/∂z · xᵀ = [0; 2] · [1; 2]ᵀ = [0, 0; 2, 4],
    # its arrays drawn as grids of numbers, not written out as [0, 0; 2, 4].
    from backpropviz.step_bands import step_bands
    from backpropviz.views import drawn_graph

    band = step_bands(drawn_graph(example("d2l_mlp")))[-1]
    assert band in step_diagrams(example("d2l_mlp"))[-1].source
    assert "[0, 0; 2, 4]" not in band and "[0; 2]" not in band
    grids = re.findall(r'<TABLE BORDER="0" CELLBORDER="0"[^>]*>((?:<TR>.*?</TR>)+)</TABLE>',
                       band)
    entries = [[re.findall(r'<TD ALIGN="RIGHT"><FONT[^>]*>([^<]*)</FONT>', row)
                for row in re.findall(r"<TR>(.*?)</TR>", grid)] for grid in grids]
    for expected in ([["0"], ["2"]], [["1"], ["2"]], [["0", "0"], ["2", "4"]],
                     [["1", "−1"], ["0", "1"]]):
        assert expected in entries
    # Each between thin brackets: a rule on the outer sides of a first and last column.
    assert all(grid.count('SIDES="LTB"') == grid.count('SIDES="RTB"') == 1 for grid in grids)


def test_the_band_starts_at_the_left_edge_over_a_wider_legend(example):
    # d2l_objective's legend is wider than its band: the equations still start where
    # the rule's "step k of n" starts, and do not spread out to the legend's width.
    svg = step_diagrams(example("d2l_objective"))[10].svg
    texts = re.findall(r'<text[^>]*x="([0-9.\-]+)"[^>]*>([^<]*)</text>', svg)
    step_x = next(float(x) for x, text in texts if text.startswith("step 10 of"))
    this_x = next(float(x) for x, text in texts if text.strip() == "this step")
    legend_x = next(float(x) for x, text in texts if text.strip() == "value")
    first_equation = next(float(x) for x, text in texts if text.startswith("∂"))
    assert abs(first_equation - step_x) < 3 and abs(this_x - step_x) < 6
    assert step_x < legend_x + 30


def test_a_badge_before_its_step_keeps_its_place_unseen(example):
    # The objective's W1 sends two contributions; before the first is sent its
    # badge is laid out (the layout stays put) but drawn with no frame.
    G = example("d2l_objective")

    def badges(step: int) -> list[tuple[str, str]]:
        return re.findall(r'shape="plain" label=<<TABLE BORDER="1"[^>]* COLOR="([^"]+)"'
                          r'[^>]*>.*?</TABLE>> class="badge ([^"]+)"', to_dot(G, step=step))

    first, last = badges(1), badges(len(G.graph["backward_order"]))
    assert first and all(color == "transparent" for color, classes in first
                         if "pending-contribution" in classes)
    assert any("pending-contribution" in classes for _, classes in first)
    assert last and all(color == THEMES["light"].grad and "pending" not in classes
                        for color, classes in last)


def test_steps_of_an_untangled_layout_are_drawn_together_as_dot_draws_each(example):
    # The scalar MLP's layout is told one input a rank after the other (an invisible
    # edge, untangling.py): its steps are still drawn from one layout in one run,
    # each with the texts dot draws for that step on its own.
    from backpropviz.graphviz import portable_svg, run_dot

    diagrams = step_diagrams(example("d2l_mlp_scalar"))
    assert 'style="invis"' in diagrams[0].source and diagrams[0].steps is not None
    for diagram in diagrams[::4]:
        alone = portable_svg(run_dot(diagram.source, "svg")).decode("utf-8")
        assert sorted(_texts(diagram.svg)) == sorted(_texts(alone))


def _statements(lines: list[str]) -> dict[str, str]:
    """DOT lines by the id of the node or edge each states (other lines left out)."""
    found = {}
    for line in lines:
        match = re.search(r' \[id="((?:[^"\\]|\\.)*)"', line)
        if match:
            found[match.group(1)] = line
    return found


@pytest.mark.parametrize(("name", "options"), [
    ("d2l_mlp", {}), ("d2l_objective", {"frame": (1920, 1080)}), ("fork", {}),
    ("d2l_mlp_scalar", {"wrap": 2, "frame": (1920, 1080)}), ("d2l_figure", {"rankdir": "book"}),
    ("scalar_loop", {})])
def test_a_steps_changes_give_the_dot_it_writes_on_its_own(example, monkeypatch, name, options):
    # The pictures of a pass are drawn from step 0's DOT and, for each later step, the
    # lines Writer.changes gives: with those in place of theirs, every node and edge
    # (dead cells, forks' badges, a fitted or folded picture's pins, a rolled loop's
    # shared weights) is stated as a Writer made for that step alone states it.
    from backpropviz.dot import Writer, dot_options
    from backpropviz.placement import placement
    from backpropviz.rolling import find_loop, rolled
    from backpropviz.steps import backward_steps, state_at
    from tests.test_rolling import loop_graph

    G = rolled(loop := loop_graph(name, 5, monkeypatch), find_loop(loop)) \
        if name == "scalar_loop" else example(name)
    checked = dot_options(**options)
    pins = placement(G, checked)
    replay = backward_steps(G)
    states = [state_at(G, k, replay) for k in range(len(replay) + 1)]
    writer = Writer(G, checked, states[0], pins)
    shown = _statements(writer.at_step(0, states[0]).splitlines())
    assert len(shown) > 10 and (pins is not None) == ("wrap" in options or "rankdir" in options)
    for k in range(1, len(states)):
        graph_line, lines = writer.changes(k, states[k - 1], states[k])
        shown.update(_statements(lines))
        alone = Writer(G, checked, states[0], pins).at_step(k, states[k]).splitlines()
        assert graph_line in alone and shown == _statements(alone), (name, k)


def test_a_layout_past_100000_points_as_graphviz_writes_it_is_pinned_in_full():
    # An RNN unrolled 60-100 steps is that wide: graphviz writes such a coordinate with
    # an exponent (1.9014e+05), and the page pins each place at it again. Its exponent
    # was taken for a number of its own (1.9014e+5.00, which neato refused).
    import math

    from backpropviz.step_drawing import _clipped, _shifted

    assert _shifted("1.9014e+05,318.5", 4.0, -1.5) == "190136.00,320.00"
    route = _shifted("e,1.0017e+05,18 1.0001e+05,18 1.0006e+05,18 1.0011e+05,18 "
                     "1.0015e+05,18", 10.0, 0.0)
    assert route == ("e,100160.00,18.00 100000.00,18.00 100050.00,18.00 100100.00,18.00 "
                     "100140.00,18.00")
    clipped = _clipped(route, 5.0)
    start, first = clipped.split()[0], clipped.split()[2]
    assert start == "s,100000.00,18.00"
    x, y = (float(n) for n in first.split(","))
    assert math.dist((x, y), (100000.0, 18.0)) == pytest.approx(5.0, abs=0.01)
    # ... and the SVG's own numbers, so written, moved as graphviz writes them.
    from backpropviz.step_drawing import _moved

    assert _moved('<text x="1.5e+05" y="-7">', 10, 1) == '<text x="150010" y="-6">'


def test_a_caption_band_that_closes_a_bracket_in_a_cell_of_its_own_is_drawn():
    # A caption set as cells wrote "= [" ... "]" around a typeset array (a GRU's 3-D
    # gradient, written before captions left such arrays to the picture): graphviz's HTML
    # reader took a lone "]" for the end of the attribute list (a syntax error).
    import graphviz

    from backpropviz.typeset import font

    cells = "".join(f"<TD>{font(text, '#000000')}</TD>" for text in ("= [", "1; 2", "]"))
    table = graphviz.Digraph()
    table.node("band", label=f"<<TABLE><TR>{cells}</TR></TABLE>>", shape="plain")
    svg = table.pipe("svg").decode("utf-8")
    assert svg.startswith("<?xml") and ">]</text>" in svg


def test_an_engines_note_in_a_steps_equation_is_set_as_words(monkeypatch):
    # "(overwrote 0.25 — gradients at a fork must add: +=)": its "a" is the article, not
    # the name a, so upright, while the names of the equation before it stay italic.
    import pathlib
    import sys

    from backpropviz.script import graph_of_script
    from backpropviz.step_bands import step_bands
    from backpropviz.views import drawn_graph

    engines = pathlib.Path(__file__).resolve().parent / "engines"
    monkeypatch.setenv("ENGINE", "Overwrites")  # a student's = for += at a fork
    monkeypatch.syspath_prepend(str(engines))
    sys.modules.pop("students", None)
    G = graph_of_script(engines / "graded.py", quiet=True)
    bands = [band for band in step_bands(drawn_graph(G)) if "overwrote" in band]
    assert bands
    for band in bands:
        before, note = band.split("(overwrote", 1)
        assert "<I>" in before  # (∂L/∂x, the names)
        assert "gradients" in note and "fork" in note and "<I>" not in note.split("</TD>")[0]


def test_an_edge_whose_share_is_not_sent_yet_runs_through_its_unseen_badge(example):
    # Before its step a share's badge keeps its place, unseen, with no fill; the edge's two
    # pieces, into the badge and out of it, meet at its middle: one line (they had stopped
    # at its unseen border, a gap a student took for a glitch). Once the badge shows,
    # filled, they stop at its border, off its number.
    G = example("fork")
    ns = "{http://www.w3.org/2000/svg}"

    def pieces(svg: str) -> tuple[dict[str, tuple], dict[str, tuple], dict[str, bool]]:
        ends, boxes, filled = {}, {}, {}
        for group in ET.fromstring(svg).iter(f"{ns}g"):
            gid, classes = group.get("id") or "", (group.get("class") or "").split()
            if gid.endswith(("/in", "/out")):
                d = next(group.iter(f"{ns}path")).get("d")
                numbers = [float(n) for n in re.findall(r"-?\d+\.?\d*", d)]
                ends[gid] = (tuple(numbers[:2]), tuple(numbers[-2:]))
            if "badge" in classes:
                border = [path for path in group.iter(f"{ns}path")][-1]
                numbers = [float(n) for n in re.findall(r"-?\d+\.?\d*", border.get("d"))]
                boxes[gid] = (min(numbers[0::2]), min(numbers[1::2]),
                              max(numbers[0::2]), max(numbers[1::2]))
                filled[gid] = any(shape.get("fill") not in (None, "none", "transparent")
                                  for shape in group
                                  if shape.tag in (f"{ns}path", f"{ns}polygon"))
        return ends, boxes, filled

    drawings = step_diagrams(G)
    assert drawings[0].steps is not None  # (the step pictures cut from one layout)
    for k, shown in ((0, False), (len(drawings) - 1, True)):
        ends, boxes, filled = pieces(drawings[k].svg)
        assert len(boxes) == 4 and set(filled.values()) == {shown}
        for eid, (left, top, right, bottom) in boxes.items():
            into, out = ends[eid + "/in"][1], ends[eid + "/out"][0]
            if not shown:
                assert math.dist(into, out) < 0.5, eid
                continue
            for x, y in (into, out):  # (on its border, not inside it)
                assert not (left + 1 < x < right - 1 and top + 1 < y < bottom - 1), eid
                assert left - 1 <= x <= right + 1 and top - 1 <= y <= bottom + 1, eid
