"""The graphviz drawing: DOT goldens, the picture's numbers, colours, steps and errors.

Regenerate the golden DOT files after an intended change of the drawing with
``BACKPROPVIZ_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/test_draw.py``
and look at the pictures before committing them.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from backpropviz import Value
from backpropviz.diagram import Diagram, draw, render_steps, step_diagrams
from backpropviz.errors import DrawError, OutputError
from backpropviz.figure import to_dot
from backpropviz.formatting import display_number, format_array, format_number, number_text
from backpropviz.html import step_through
from backpropviz.ir import to_networkx
from backpropviz.number_tables import column_widths, grid_texts, lone_width
from backpropviz.output import render_memory, write, write_steps
from backpropviz.schema import validated_once
from backpropviz.steps import backward_steps, dead_masks
from backpropviz.style import THEMES
from backpropviz.views import drawn_graph

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
# The examples built on our engine (scripts importing torch go through the
# PyTorch importer, tested with it).
EXAMPLES = sorted(path.stem for path in (ROOT / "examples").glob("*.py")
                  if "import torch" not in path.read_text(encoding="utf-8"))
SVG = "{http://www.w3.org/2000/svg}"


# ---------------------------------------------------------------- helpers


def svg_groups(svg: str) -> dict[str, ET.Element]:
    """The SVG's node and edge groups by id (the IR ids and "u->v#key")."""
    root = ET.fromstring(svg)
    return {g.get("id"): g for g in root.iter(f"{SVG}g") if g.get("id")}


def texts(group: ET.Element, fill: str | None = None) -> list[str]:
    """The non-blank texts of a group in drawing order, optionally of one colour."""
    found = []
    for text in group.iter(f"{SVG}text"):
        if not (text.text or "").strip():
            continue
        if fill is None or (text.get("fill") or "#000000").lower() == fill:
            found.append(text.text)
    return found


def flat(grid: list[list[str]]) -> list[str]:
    return [cell for row in grid for cell in row]


def shown(x, precision: int = 4) -> list[str]:
    """The texts a number or array is drawn as, in reading order."""
    return [cell.replace("-", "\u2212") for cell in flat(format_array(x, precision))]


# ---------------------------------------------------------------- numbers


@pytest.mark.parametrize(("x", "text"), [
    (4.0, "4"), (-0.0, "0"), (0.0, "0"), (-0.1, "-0.1"), (1e-5, "1e-05"),
    (0.7071067811865476, "0.7071"), (4.1000000000000005, "4.1"), (6.881373587019543, "6.881"),
    (-1234567.0, "-1.235e+06"), (float("nan"), "nan"), (float("-inf"), "-inf"),
])
def test_format_number_is_compact_and_has_no_negative_zero(x, text):
    assert format_number(x, 4) == text


def test_display_number_uses_a_true_minus_sign():
    assert display_number(-2.5) == "\u22122.5"
    assert display_number(-0.0) == "0"


def test_a_scalars_gradient_cell_is_as_wide_as_the_grids_of_its_numbers_would_make_it():
    # lone_width, the writer's way for a scalar, against column_widths of the grids
    numbers = [0.5, -1.3224, 1e-05, 123456.0, -2.0]
    grids = [grid_texts(x, 4)[0] for x in numbers]
    assert [lone_width(numbers, 4, 14)] == column_widths(grids, 14)
    assert lone_width(numbers, 4, 14) > lone_width([0.5], 4, 14)


def test_format_array_lays_out_vectors_as_columns_and_elides_long_axes():
    assert format_array(3.0) == [["3"]]
    assert format_array([1.0, -2.0]) == [["1"], ["-2"]]
    assert format_array([[1.0, 2.0]]) == [["1", "2"]]
    long = format_array(np.arange(10.0))
    assert flat(long) == ["0", "1", "2", "3", "⋮", "9"]
    big = format_array(np.arange(100.0).reshape(10, 10))
    assert big[0] == ["0", "1", "2", "3", "…", "9"]
    assert big[4] == ["⋮", "⋮", "⋮", "⋮", "⋱", "⋮"]
    # Three or more axes: the matrices of the last two, under their leading indices.
    cube = format_array(np.arange(8.0).reshape(2, 2, 2))
    assert cube == [["[0]", ""], ["0", "1"], ["2", "3"], ["[1]", ""], ["4", "5"], ["6", "7"]]
    many = format_array(np.zeros((9, 1, 2)))
    assert [row[0] for row in many if row[0].startswith(("[", "⋮"))] == [
        "[0]", "[1]", "[2]", "⋮", "[8]"]
    # A pooled result kept with its axes of length 1 (1×32×1×1): a row of 32, not 32
    # matrices of one entry each under their indices; each cell is its entry's.
    pooled = np.arange(32.0).reshape(1, 32, 1, 1)
    assert format_array(pooled) == format_array(pooled.reshape(1, 32))
    texts, cells = grid_texts(pooled, 4)
    assert all(pooled[cell] == float(text) for row, places in zip(texts, cells, strict=True)
               for text, cell in zip(row, places, strict=True) if cell is not None)
    assert format_array(np.arange(6.0).reshape(2, 3, 1)) == [["0", "1", "2"], ["3", "4", "5"]]
    # ... and a caption writes it as its box lays it out: a row, not [[[0]; [1]; …]]
    assert number_text(pooled[:, :4]) == "[0, 1, 2, 3]"
    assert number_text(np.arange(8.0).reshape(2, 2, 2)) == "[[0, 1; 2, 3]; [4, 5; 6, 7]]"


# ---------------------------------------------------------------- DOT


@pytest.mark.parametrize("name", EXAMPLES)
def test_dot_matches_golden_file(example, name):
    _check_golden(f"{name}.dot", to_dot(example(name)))


def test_step_in_dark_theme_matches_golden_file(example):
    _check_golden("d2l_mlp-step3-dark.dot", to_dot(example("d2l_mlp"), step=3, theme="dark"))


def _check_golden(filename: str, dot: str) -> None:
    path = GOLDEN / filename
    if os.environ.get("BACKPROPVIZ_REGEN_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(dot, encoding="utf-8")
    assert path.exists(), f"no golden file {path}; set BACKPROPVIZ_REGEN_GOLDEN=1 to write it"
    assert dot == path.read_text(encoding="utf-8")


def test_dot_names_ids_and_classes_are_the_ir_ids(example):
    G = example("d2l_mlp")
    dot = to_dot(G)
    for node in G.nodes:
        assert f'"{node}" [id="{node}"' in dot
    for u, v, k in G.edges(keys=True):
        assert f'"{u}" -> "{v}" [id="{u}->{v}#{k}"' in dot
    assert 'class="value param stored has-grad"' in dot
    assert 'class="op relu dead"' in dot


def test_invalid_graph_is_refused_before_drawing(example):
    G = example("add_mul")
    G.nodes["v0"]["role"] = "intermediate"  # but no op produced it
    with pytest.raises(DrawError, match=r"^cannot draw an invalid graph: value node 'v0'"):
        to_dot(G)
    with pytest.raises(DrawError, match="needs an IR graph, a Value or Tensor"):
        draw("not a graph")


def _counting_validations(monkeypatch) -> list:
    """The graphs schema.validate is given from now on (by the writers and the front end)."""
    from backpropviz import schema, script

    given, validate = [], schema.validate
    monkeypatch.setattr(schema, "validate", lambda G: given.append(G) or validate(G))
    monkeypatch.setattr(script, "validate", schema.validate)
    return given


@pytest.mark.parametrize("call", [
    lambda G, path: draw(G, fit="1920x1080"), lambda G, path: step_diagrams(G, fit="1280x720"),
    lambda G, path: step_through(G), lambda G, path: write(G, path / "x.html"),
    lambda G, path: write(G, path / "x.json"), lambda G, path: render_memory(G),
    lambda G, path: write_steps(G, path / "steps")])
def test_each_way_to_draw_validates_the_graph_once_and_refuses_an_invalid_one(
        call, example, monkeypatch, tmp_path):
    G = example("add_mul")
    given = _counting_validations(monkeypatch)
    call(G, tmp_path)
    assert given == [G]  # (the fit, each picture, the page and its picture: not again)
    G.nodes["v0"]["role"] = "intermediate"  # but no op produced it
    (tmp_path / "bad").mkdir()
    with pytest.raises(DrawError, match=r"^cannot draw an invalid graph: value node 'v0'"):
        call(G, tmp_path / "bad")
    assert not list((tmp_path / "bad").iterdir())  # (and nothing written)


def test_a_graph_validated_where_it_was_built_is_not_validated_again_within(example,
                                                                            monkeypatch):
    G = example("add_mul")
    given = _counting_validations(monkeypatch)
    with validated_once():  # as the command line draws graph_of_script's graph
        draw(G)
        to_dot(G)
    assert given == []
    G.nodes["v0"]["role"] = "intermediate"
    with pytest.raises(DrawError, match="cannot draw an invalid graph"):  # (once out again)
        draw(G)


@pytest.mark.parametrize(("options", "message"), [
    ({"theme": "sepia"}, "unknown theme: 'sepia' (must be one of ['dark', 'light', "
                         "'transparent', 'transparent-dark'])"),
    ({"rankdir": "XY"},
     "unknown rankdir: 'XY' (must be one of ['LR', 'RL', 'TB', 'BT', 'book'])"),
    ({"precision": 0}, "precision must be an int of significant digits, 1 to 17"),
    ({"precision": 10**11}, "precision must be an int of significant digits, 1 to 17, "
                            "got 100000000000"),  # (Python's float formatting: a ValueError)
    ({"step": 3}, "step 3 is out of range (must be an int in 0..2)"),
])
def test_bad_options_are_one_clear_sentence(example, options, message):
    with pytest.raises(DrawError) as error:
        to_dot(example("add_mul"), **options)
    assert str(error.value).startswith(message)


_TWICE = """
import hashlib
from backpropviz.diagram import draw
from backpropviz.script import graph_of_script
d = draw(graph_of_script({script!r}, quiet=True), step=5)
print(hashlib.sha256(d.source.encode()).hexdigest(), hashlib.sha256(d.pipe("svg")).hexdigest())
"""


def test_dot_and_svg_are_byte_identical_across_processes():
    code = _TWICE.format(script=str(ROOT / "examples" / "d2l_objective.py"))
    runs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "BACKPROPVIZ_CACHE": ""}  # (dot runs)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, cwd=ROOT, check=True)
        runs.append(done.stdout)
    assert runs[0] == runs[1]
    assert len(runs[0].split()) == 2


# ---------------------------------------------------------------- the picture


@pytest.mark.parametrize("name", EXAMPLES)
def test_svg_numbers_are_the_irs(example, name):
    G = drawn_graph(example(name))  # as drawn: a group is one op
    theme = THEMES["light"]
    groups = svg_groups(draw(G).svg)
    for node, attrs in G.nodes(data=True):
        if attrs["kind"] != "value":
            continue
        numbers = [t for t in groups[node].iter(f"{SVG}text")
                   if (t.text or "").strip() not in ("", "●")
                   and "Helvetica" in t.get("font-family")]
        # Values in black, then gradients in blue (red where a dead ReLU
        # zeroed them); names are set in another face.
        data = [t.text for t in numbers if (t.get("fill") or "#000000") == theme.text]
        grad = [t.text for t in numbers if t.get("fill") in (theme.grad, theme.dead_text)]
        assert data == shown(attrs["data"]), node
        # constants are drawn without the gradient the engine gave them
        assert grad == ([] if attrs["role"] == "const" else shown(attrs["grad"])), node
        assert len(data) + len(grad) == len(numbers)


def test_fork_shows_each_contribution_on_its_edge_and_the_sum_on_the_node(example):
    G = example("fork")
    blue = THEMES["light"].grad
    groups = svg_groups(draw(G).svg)
    a = next(v for v, label in G.nodes(data="label") if label == "a")
    edges = [e for e in G.out_edges(a, keys=True)]
    assert len(edges) == 2
    for u, v, k in edges:
        assert texts(groups[f"{u}->{v}#{k}"], blue) == [display_number(G.edges[u, v, k]["grad"])]
    assert texts(groups[a], blue) == [display_number(G.nodes[a]["grad"])] == ["24"]


def test_dead_relu_marks_the_zeroed_gradients_of_d2l_mlp(example):
    G = example("d2l_mlp")
    theme = THEMES["light"]
    by_label = {label: v for v, label in G.nodes(data="label") if label}
    values, _ = dead_masks(G)
    # The dead first unit: dL/dz1 = 0, and the top row of dL/dW1.
    assert values[by_label["z"]].tolist() == [True, False]
    assert values[by_label["W1"]].tolist() == [[True, True], [False, False]]
    # W2's zero comes from h1 = 0 in the forward pass, not from the gate.
    assert by_label["W2"] not in values
    svg = draw(G).svg
    groups = svg_groups(svg)
    assert texts(groups[by_label["W1"]], theme.dead_text) == ["0", "0"]
    assert texts(groups[by_label["W1"]], theme.grad) == ["2", "4"]
    assert texts(groups[by_label["W2"]], theme.dead_text) == []
    relu = next(op for op, name in G.nodes(data="op") if name == "relu")
    assert "dead" in groups[relu].get("class").split()
    assert "zeroed by a dead ReLU" in svg
    # The key shows the dashed gate the figure draws, in its colour.
    key = next(group for group in svg.split("<g id=") if "zeroed by a dead ReLU" in group)
    assert "stroke-dasharray" in key and f'stroke="{theme.dead_line}"' in key
    assert ">ReLU</text>" in key


def test_dead_relu_marks_follow_the_scalar_graph_too(example):
    G = example("d2l_mlp_scalar")
    values, _ = dead_masks(G)
    dead = {G.nodes[v]["label"] for v in values}
    assert {"z1", "w1_11", "w1_12"} <= dead
    assert not dead & {"w2_1", "x1", "z2", "w1_21"}


def test_stored_values_are_marked_and_their_total_shown(example):
    G = example("d2l_mlp")
    svg = draw(G).svg
    groups = svg_groups(svg)
    for node, stored in G.nodes(data="stored"):
        if stored is not None:  # a constant's mark is left out, as is its gradient
            marked = stored and G.nodes[node]["role"] != "const"
            assert ("●" in texts(groups[node])) == marked
    assert f"saved for backward: {G.graph['stored_bytes']} bytes" in svg
    # the total counts the constants the backward pass reads too (L / 2 keeps its 2),
    # which carry no mark: the legend says what they add, 8 bytes a float64
    unmarked = [node for node, attrs in G.nodes(data=True)
                if attrs.get("stored") and attrs["role"] == "const"]
    assert unmarked and f"({8 * len(unmarked)} bytes of it constants)" in svg


def test_before_backward_and_forward_only_show_no_gradient(example):
    a, b, c = Value(2.0), Value(1.0), Value(-3.0)
    e = (a + b) * c
    fresh = to_networkx(e, names={"a": a, "b": b, "c": c, "e": e})
    for G, options in ((fresh, {}), (example("d2l_objective"), {"forward_only": True})):
        for theme in THEMES.values():
            svg = draw(G, theme=theme.name, **options).svg
            root = ET.fromstring(svg)
            colours = {(t.get("fill") or "").lower() for t in root.iter(f"{SVG}text")}
            assert theme.grad not in colours
            assert "has-grad" not in svg and "gradient" not in svg


# ---------------------------------------------------------------- contrast


def _rgb(colour: str) -> tuple[float, float, float] | None:
    named = {"white": "#ffffff", "black": "#000000"}
    colour = named.get(colour, colour)
    if not re.fullmatch(r"#[0-9a-fA-F]{6}", colour):
        return None  # none, transparent, or a colour with alpha 0
    return tuple(int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))


def _luminance(rgb: tuple[float, float, float]) -> float:
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(_rgb(a)), _luminance(_rgb(b))), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _numbers(text: str) -> list[float]:
    return [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)]


def _shape_box(element: ET.Element) -> tuple[float, float, float, float] | None:
    """The bounding box of a filled polygon, ellipse or path, in SVG coordinates."""
    tag = element.tag.removeprefix(SVG)
    if tag == "ellipse":
        cx, cy, rx, ry = (float(element.get(k)) for k in ("cx", "cy", "rx", "ry"))
        return cx - rx, cy - ry, cx + rx, cy + ry
    numbers = _numbers(element.get("points") or element.get("d") or "")
    if tag not in ("polygon", "path") or len(numbers) < 4:
        return None
    xs, ys = numbers[0::2], numbers[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def text_fills(svg: str) -> list[tuple[str, str, str]]:
    """Each visible text with its colour and the fill drawn last under its middle."""
    root = ET.fromstring(svg)
    found = []
    fills: list[tuple[tuple, str]] = []
    for element in root.iter():
        tag = element.tag.removeprefix(SVG)
        if tag in ("polygon", "ellipse", "path"):
            box, fill = _shape_box(element), element.get("fill", "none")
            if box and _rgb(fill):
                fills.append((box, fill))
        elif tag == "text" and (element.text or "").strip():
            x, y = float(element.get("x")), float(element.get("y"))
            middle = y - 0.3 * float(element.get("font-size"))
            under = [fill for (x0, y0, x1, y1), fill in fills
                     if x0 <= x <= x1 and y0 <= middle <= y1]
            found.append((element.text, element.get("fill") or "#000000",
                          under[-1] if under else "transparent"))
    return found


@pytest.mark.parametrize("theme", sorted(THEMES))
def test_every_text_has_contrast_at_least_4_5_against_its_fill(example, theme):
    checked = 0
    for name in ("d2l_objective", "d2l_mlp_scalar"):
        G = example(name)
        for step in (None, 0, 3):
            for text, colour, fill in text_fills(draw(G, theme=theme, step=step).svg):
                if not _rgb(fill):  # on a transparent theme: on the slide's own colour
                    assert THEMES[theme].background == "transparent", (text, theme)
                    fill = THEMES[theme].label_fill
                ratio = contrast(colour, fill)
                assert ratio >= 4.5, f"{text!r} {colour} on {fill}: {ratio:.2f}:1"
                checked += 1
    assert checked > 200


# ---------------------------------------------------------------- steps


def test_steps_highlight_each_op_in_backward_order_and_reveal_gradients_in_turn(example):
    G = example("d2l_mlp")
    order = G.graph["backward_order"]
    diagrams = step_diagrams(G)
    assert len(diagrams) == len(order) + 1
    replay = backward_steps(G)
    blue, dead = THEMES["light"].grad, THEMES["light"].dead_text
    for k, diagram in enumerate(diagrams):
        groups = svg_groups(diagram.svg)
        current = [g for g, el in groups.items() if "current" in (el.get("class") or "").split()
                   and g in G]
        assert current == ([] if k == 0 else [order[k - 1]])
        known = G.graph["seeds"] if k == 0 else replay[k - 1].grads
        for node, kind in G.nodes(data="kind"):
            if kind != "value":
                continue
            gradient = texts(groups[node], blue) + texts(groups[node], dead)
            if node in known and G.nodes[node]["role"] != "const":
                assert sorted(gradient) == sorted(shown(known[node])), (k, node)
            else:
                assert gradient == [], (k, node)
        if k:
            for u, v, key in replay[k - 1].edges:
                assert "current" in groups[f"{u}->{v}#{key}"].get("class").split()


def test_step_shows_running_sums_at_a_fork(example):
    G = example("d2l_objective")
    W1 = next(v for v, label in G.nodes(data="label") if label == "W1")
    blue = THEMES["light"].grad
    seen = []
    for diagram in step_diagrams(G):
        seen.append(texts(svg_groups(diagram.svg)[W1], blue))
    partial = [s for s in seen if s and s != seen[-1]]
    assert partial, "W1 should first show its share from the penalty alone"
    assert seen[-1] == shown(G.nodes[W1]["grad"])


def test_render_steps_writes_numbered_files(example, tmp_path):
    G = example("add_mul")
    paths = render_steps(G, tmp_path / "frames", theme="dark")
    assert [p.name for p in paths] == ["step-000.svg", "step-001.svg", "step-002.svg"]
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == [p.name for p in paths]
    assert all(p.read_bytes().startswith(b"<?xml") for p in paths)


# ---------------------------------------------------------------- Diagram


def test_diagram_renders_formats_atomically(example, tmp_path):
    diagram = draw(example("add_mul"))
    assert isinstance(diagram, Diagram)
    png = diagram.render(tmp_path / "e.png")
    assert png == tmp_path / "e.png" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert diagram.render(tmp_path / "e.pdf").read_bytes()[:5] == b"%PDF-"
    assert diagram.render(tmp_path / "graph", format="svg").read_text().startswith("<?xml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.pdf", "e.png", "graph.svg"]
    umask = os.umask(0)
    os.umask(umask)
    assert png.stat().st_mode & 0o777 == 0o666 & ~umask
    bundle = diagram._repr_mimebundle_()
    assert bundle["image/svg+xml"] == diagram.svg
    # e = (a + b)c: 4 values (a, b, c and d = a + b, e), 2 ops, by the example's code.
    assert bundle["text/plain"] == ("<Diagram of 5 values and 2 ops, with gradients; "
                                    ".render('figure.svg') writes it>")
    assert diagram._repr_svg_() == diagram.svg


def test_render_errors_are_one_sentence(example, tmp_path, monkeypatch):
    diagram = draw(example("add_mul"))
    with pytest.raises(DrawError) as error:
        diagram.pipe("svgz")
    assert str(error.value) == ("unknown format: 'svgz' (must be one of ['bmp', 'canon', "
                                "'dot', 'gif', 'gv', 'jpeg', 'jpg', 'json', 'pdf', 'plain', "
                                "'png', 'ps', 'svg', 'tif', 'tiff', 'xdot'])")
    with pytest.raises(OutputError, match=r"^cannot write .*missing"):
        diagram.render(tmp_path / "missing" / "e.svg")
    assert not (tmp_path / "missing").exists()
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DrawError) as error:
        draw(example("add_mul")).pipe("svg")
    assert str(error.value) == (
        "failed to execute 'dot', make sure the Graphviz executables are on your PATH "
        "(on Debian: apt-get install graphviz)")


def test_draw_accepts_a_root_and_names():
    a, b = Value(3.0), Value(4.0)
    c = a * b
    c.backward()
    diagram = draw(c, names={"a": a, "b": b, "c": c})
    assert {label for _, label in diagram.graph.nodes(data="label")} == {"a", "b", "c", None}
    assert "<I>a</I>" in diagram.source
    assert texts(svg_groups(diagram.svg)["v0"], THEMES["light"].grad) == ["4"]


def test_a_vector_shares_brackets_stay_inside_its_badges_rounded_corners():
    # (p forks into log(p) and 1 − p: its shares are vectors, each in a rounded badge,
    # whose bracket corners stood out past the rounded corners, a glitch on a slide)
    pytest.importorskip("torch")
    from backpropviz.script import graph_of_script

    G = graph_of_script(ROOT / "tests" / "torch_scripts" / "logistic_by_hand.py", quiet=True)
    root = ET.fromstring(draw(G).pipe("svg"))
    ns = "{http://www.w3.org/2000/svg}"
    checked = 0
    for group in root.iter(f"{ns}g"):
        if "badge" not in (group.get("class") or "").split():
            continue
        border = next(path for path in group.iter(f"{ns}path")
                      if path.get("stroke") not in (None, "transparent"))
        numbers = [float(n) for n in re.findall(r"-?\d+\.?\d*", border.get("d"))]
        xs, ys = numbers[0::2], numbers[1::2]
        left, right, top, bottom = min(xs), max(xs), min(ys), max(ys)
        radius = xs[0] - left  # (the path starts where the top left corner's curve ends)
        corners = [(x, y) for line in group.iter(f"{ns}polyline")
                   for x, y in (map(float, point.split(","))
                                for point in line.get("points").split())]
        for x, y in corners:
            cx = min(max(x, left + radius), right - radius)  # the nearest corner's centre
            cy = min(max(y, top + radius), bottom - radius)
            assert math.hypot(x - cx, y - cy) <= radius - 1, (group.get("id"), x, y)
        checked += bool(corners)
    assert checked >= 2  # (both of p's shares)
