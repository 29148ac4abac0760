"""Slide-ready figures: names on every box a student reads, constants without
gradients, contributions on their own edges, figures fitted to a frame, groups."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from backpropviz import Tensor, Value, to_networkx
from backpropviz.draw import draw, to_dot
from backpropviz.layout import layout

EXAMPLE_NAMES = sorted(path.stem for path in
                       (Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


def _svg_texts(svg: str) -> list[str]:
    return [re.sub(r"<[^>]*>", "", text) for text in re.findall(r"<text[^>]*>.*?</text>", svg)]


def test_a_number_bound_to_a_global_name_is_named(example):
    G = example("d2l_objective")
    constants = sorted((attrs["data"], attrs["label"] or "") for _, attrs in G.nodes(data=True)
                       if attrs.get("role") == "const")
    # y = 0 names its constant; the 2 of "/ 2" and the 0.05 of lambd / 2 have no name.
    assert constants == [(0.0, "y"), (0.05, ""), (2.0, "")]


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


def test_unnamed_values_are_headed_by_their_expression(example):
    svg = draw(example("d2l_objective")).svg
    texts = _svg_texts(svg)
    for expression in ("o − y", "(o − y)²", "Σ(o − y)²"):
        assert expression in texts, expression
    assert "o" in texts and "y" in texts  # named values keep their names


def test_expression_heads_use_the_names_on_the_boxes():
    a = Value(2.0, label="a")
    b = Value(-3.0, label="b")
    out = (a * b).tanh()
    out.backward()
    texts = _svg_texts(draw(out).svg)
    assert "a·b" in texts and "tanh(a·b)" in texts


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
