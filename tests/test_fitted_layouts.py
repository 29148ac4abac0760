"""Every example at slide size and in every layout: text the back row reads, and no
edge crossing another."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_slides import _text_px

from backpropviz.crossings import count_crossings
from backpropviz.diagram import draw, step_diagrams
from backpropviz.errors import Note
from backpropviz.figure import to_dot
from backpropviz.fitting import SLIDE_NUMBER_PX, SLIDE_TEXT_PX
from backpropviz.graphviz import run_dot

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted([path.stem for path in (ROOT / "examples").glob("*.py")]
                  + ["capstone/forked_neuron"])
# The book's figures, and what a slide wants of them at 1920 x 1080: every
# number 28 px tall and every other text 24 px (14 pt and 12 pt on a slide).
BOOK_FIGURES = {"add_mul", "fork", "d2l_mlp", "d2l_figure", "d2l_objective",
                "capstone/forked_neuron"}
# A graph of mlp3's size (three layers and a loss) is allowed smaller numbers;
# a graph of 16 x 32 matrices (memory_growth) is there for its memory chart.
MLP_SIZE_NUMBER_PX = 22.0
NOT_SLIDES = {"memory_growth"}
FRAME = (1920, 1080)


def crossings(source: str) -> int:
    return count_crossings(json.loads(run_dot(source, "json")))


def sizes_at_the_frame(svg: str) -> tuple[list[float], list[float]]:
    """The px heights of the numbers in boxes and badges, and of every other text."""
    _, texts = _text_px(svg, FRAME)
    numbers = [px for text, px, in_node, font in texts if in_node and "Helvetica" in font
               and re.fullmatch(r"[−\-]?[0-9.e+−]+", text.strip())]
    others = [px for text, px, in_node, font in texts
              if text.strip() != "●" and not (in_node and "Helvetica" in font and
                                              re.fullmatch(r"[−\-]?[0-9.e+−]+", text.strip()))]
    return numbers, others


@pytest.mark.parametrize("name", EXAMPLES)
def test_a_fitted_example_has_slide_sized_numbers_and_text(example, name):
    diagram = draw(example(name), fit="1920x1080")
    numbers, others = sizes_at_the_frame(diagram.svg)
    assert numbers and others
    if name in BOOK_FIGURES:
        assert min(numbers) >= SLIDE_NUMBER_PX and min(others) >= SLIDE_TEXT_PX
        assert diagram.fit.advice is None
    elif name not in NOT_SLIDES:
        assert min(numbers) >= MLP_SIZE_NUMBER_PX, name
        # the rest in the proportion of the slide's two sizes
        assert min(others) >= MLP_SIZE_NUMBER_PX * SLIDE_TEXT_PX / SLIDE_NUMBER_PX, name
    # as the fit reckoned them (to a percent): it says so when they are too small
    assert min(numbers) == pytest.approx(diagram.fit.number_px, rel=0.02)


@pytest.mark.parametrize("name", EXAMPLES)
def test_no_layout_of_an_example_crosses_an_edge(example, name):
    # Each has a drawing without crossings; where dot's own crosses (the objective's
    # W2 @ h, the scalar MLP's two inputs into two sums), untangling.py finds one.
    G = example(name)
    for options in ({}, {"compact": True}, {"rankdir": "book"},
                    {"fit": "1920x1080", "compact": True}, {"fit": "1920x1080"}):
        assert crossings(draw(G, **options).source) == 0, options


@pytest.mark.parametrize("name", ["d2l_figure", "d2l_mlp_scalar", "mlp3"])
def test_the_book_layout_keeps_dots_routes_sheared(example, name):
    # The routes are dot's, each end rising with its box: an edge meets its boxes.
    G = example(name)
    source = to_dot(G, rankdir="book")
    data = json.loads(run_dot(source, "json"))
    places = {obj["_gvid"]: obj for obj in data["objects"] if "pos" in obj}
    for line in data["edges"]:
        points = [tuple(map(float, part.split(","))) for part in line["pos"].split()
                  if part[:2] not in ("e,", "s,")]
        for end, point in ((line["tail"], points[0]), (line["head"], points[-1])):
            x, y = map(float, places[end]["pos"].split(","))
            half_w, half_h = float(places[end]["width"]) * 36, float(places[end]["height"]) * 36
            assert abs(point[0] - x) <= half_w + 12 and abs(point[1] - y) <= half_h + 12, \
                (line.get("id"), point, (x, y))


@pytest.mark.parametrize("name", ["d2l_objective", "mlp3", "fork"])
def test_a_fitted_build_makes_room_for_its_caption_band(example, name):
    # Under each step picture its band (step k, the rule, the worked lines): the fit
    # lays out for both, so the steps' numbers are as large as it reckons, every
    # step alike, and the picture, band and all, fills the frame.
    diagrams = step_diagrams(example(name), fit="1920x1080")
    for diagram in diagrams[:2]:
        numbers, _ = sizes_at_the_frame(diagram.svg)
        assert min(numbers) == pytest.approx(diagram.fit.number_px, rel=0.03)
        size = re.search(r'<svg width="([0-9.]+)px" height="([0-9.]+)px"', diagram.svg)
        width, height = float(size.group(1)), float(size.group(2))
        assert max(width / FRAME[0], height / FRAME[1]) == pytest.approx(1, abs=0.002)


def test_step_pictures_with_one_layout_to_choose_measure_the_fit_as_fit_does():
    """A graph too large to fold, its direction given: the step pictures' own layout
    measures the fit (no layout of its own), and agrees with fit's."""
    from backpropviz import Value
    from backpropviz.diagram import step_diagrams
    from backpropviz.fitting import fit, lone_choice
    from backpropviz.script import as_graph

    h = Value(0.5, label="h")
    w = Value(0.9, label="w", requires_grad=True)
    for _ in range(40):  # a loop: some 160 values and ops, past folding
        h = (h * w + 0.1).tanh()
    h.backward()
    G = as_graph(h)
    assert lone_choice(G, "1920x1080", rankdir="LR")
    assert not lone_choice(G, "1920x1080")  # (both directions are tried then)
    pictures = step_diagrams(G, fit="1920x1080", rankdir="LR", captions=False)
    assert pictures[0].steps is not None  # drawn together
    chosen, alone = pictures[0].fit, fit(G, "1920x1080", rankdir="LR")
    assert (chosen.rankdir, chosen.wrap, chosen.frame) == (alone.rankdir, alone.wrap, alone.frame)
    assert chosen.scale == pytest.approx(alone.scale, rel=1e-3)
    assert chosen.number_px == pytest.approx(alone.number_px, rel=1e-3)
    assert all(picture.fit is chosen for picture in pictures)



# The step slides of the book's figures, each with its caption band (step k, the
# rule, the worked lines) under the picture, and the number sizes they reached before
# the band set its equations side by side: d2l_figure 25.0 px, d2l_objective 24.3.
@pytest.mark.parametrize("name", ["add_mul", "fork", "d2l_mlp", "d2l_figure", "d2l_objective",
                                  "d2l_mlp_scalar"])
def test_a_fitted_build_of_a_book_figure_has_slide_sized_text_on_every_step(example, name):
    diagrams = step_diagrams(example(name), fit="1920x1080")
    for step, diagram in enumerate(diagrams):
        numbers, others = sizes_at_the_frame(diagram.svg)
        assert min(numbers) >= SLIDE_NUMBER_PX, (step, min(numbers))
        assert min(others) >= SLIDE_TEXT_PX, (step, min(others))
        assert crossings(diagram.source) == 0, step
    assert diagrams[0].fit.advice is None


def test_a_band_sets_its_equations_side_by_side_within_its_width(example):
    # The objective's last step: three equations, each with arrays, on one row of a
    # band as wide as the slide allows; each ends inside the band (graphviz does not
    # shrink a row of a fixed size to fit: it would run past the band's edge).
    from backpropviz.metrics import text_width

    diagram = step_diagrams(example("d2l_objective"), fit="1920x1080")[-1]
    width = int(re.search(r'<TABLE FIXEDSIZE="TRUE" ALIGN="LEFT" WIDTH="(\d+)"',
                          diagram.source).group(1))
    texts = re.findall(r'<text text-anchor="start" x="([0-9.\-]+)" y="([0-9.\-]+)"'
                       r'[^>]*font-size="([0-9.]+)"[^>]*>([^<]*)</text>', diagram.svg)
    start = next(float(x) for x, _, _, text in texts if text.startswith("step 12 of"))
    rows = {}
    for x, y, size, text in texts:
        if float(x) >= start - 1:
            rows.setdefault(y, []).append((float(x), float(size), text))
    # (the row with the most runs starting with ∂: the equations')
    row = max(rows.values(), key=lambda runs: sum(text.startswith("∂") for _, _, text in runs))
    assert sum(text.startswith("∂") for _, _, text in row) == 3
    right = max(x + text_width(text, size, "serif") for x, size, text in row)
    # (the svg's coordinates are the layout's points, the band's width lettered too)
    assert right <= start + width


def test_a_build_too_large_for_its_slide_says_the_size_reached_and_what_helps(example, tmp_path):
    # mlp3's steps work out 3 x 3 matrices: the band under each takes much of the
    # frame's height. The build says so, as a figure does, with what helps.
    from backpropviz.output import write_steps

    with pytest.warns(Note) as notes:
        written = write_steps(example("mlp3"), tmp_path / "steps", fit="1920x1080")
    assert len(written) == 12
    said = " ".join(str(note.message) for note in notes)
    reached = float(re.search(r"the numbers are ([0-9.]+) px tall", said).group(1))
    numbers, _ = sizes_at_the_frame(written[0].read_text(encoding="utf-8"))
    assert reached == pytest.approx(min(numbers), abs=0.15) and reached < MLP_SIZE_NUMBER_PX
    assert "caption under each step takes" in said and "-o steps.html" in said
