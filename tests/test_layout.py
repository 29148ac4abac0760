"""Graphviz positions: every node and edge has one, and they are the SVG's."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from backpropviz.diagram import draw
from backpropviz.dot import BADGE_IN, BADGE_OUT
from backpropviz.layout import Layout, layout
from backpropviz.steps import backward_steps
from backpropviz.views import drawn_graph

ROOT = Path(__file__).resolve().parent.parent
# The examples built on our engine (a torch script is tested with the importer).
EXAMPLES = sorted(path.stem for path in (ROOT / "examples").glob("*.py")
                  if "import torch" not in path.read_text(encoding="utf-8"))
SVG = "{http://www.w3.org/2000/svg}"


def _numbers(text: str) -> list[float]:
    return [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", text)]


def _svg_shapes(svg: str) -> tuple[dict, dict, tuple[float, float]]:
    """Node outlines and edge paths of the SVG by id, in graphviz coordinates (y up)."""
    root = ET.fromstring(svg)
    nodes, edges = {}, {}
    for group in root.iter(f"{SVG}g"):
        kind = (group.get("class") or "").split()[:1]
        if kind == ["node"]:
            outline = next(el for el in group if el.tag in (f"{SVG}ellipse", f"{SVG}path",
                                                             f"{SVG}polygon"))
            if outline.tag == f"{SVG}ellipse":
                nodes[group.get("id")] = ("circle", float(outline.get("cx")),
                                          -float(outline.get("cy")), 2 * float(outline.get("rx")))
            else:
                numbers = _numbers(outline.get("d") or outline.get("points"))
                xs, ys = numbers[0::2], numbers[1::2]
                nodes[group.get("id")] = ("box", (min(xs) + max(xs)) / 2,
                                          -(min(ys) + max(ys)) / 2, max(xs) - min(xs))
        elif kind == ["edge"]:
            path = next(el for el in group if el.tag == f"{SVG}path")
            numbers = _numbers(path.get("d"))
            edges[group.get("id")] = list(zip(numbers[0::2], [-y for y in numbers[1::2]],
                                              strict=True))
    width, height = _numbers(root.get("viewBox"))[2:]
    return nodes, edges, (width, height)


@pytest.mark.parametrize("name", EXAMPLES)
def test_layout_has_every_node_and_edge_where_the_svg_draws_them(example, name):
    G = drawn_graph(example(name))  # as drawn: a group is one op
    options = {"rankdir": "BT", "theme": "dark"} if name == "add_mul" else {}
    result = layout(G, **options)
    assert isinstance(result, Layout)
    assert set(result.nodes) == set(G.nodes)
    assert set(result.edges) == set(G.edges(keys=True))
    nodes, edges, (width, height) = _svg_shapes(draw(G, **options).svg)
    assert width == pytest.approx(result.width + 2 * result.pad, abs=1)
    assert height == pytest.approx(result.height + 2 * result.pad, abs=1)
    for node, box in result.nodes.items():
        shape, x, y, w = nodes[node]
        assert box.shape == shape == ("box" if G.nodes[node]["kind"] == "value" else "circle")
        assert (box.x, box.y) == pytest.approx((x, y), abs=0.6)
        assert box.width == pytest.approx(w, abs=1.5)
    for (u, v, k), path in result.edges.items():
        eid = f"{u}->{v}#{k}"
        if eid in edges:
            svg_points = edges[eid]
        else:
            # A contribution's badge sits on its edge: the SVG draws the edge in
            # two pieces, and the layout has one path running across the badge.
            into, out = edges[eid + BADGE_IN], edges[eid + BADGE_OUT]
            svg_points = [*into, into[-1], out[0], *out]
            _, x, y, _ = nodes[eid]
            assert path.label == pytest.approx((x, y), abs=0.6)
        assert len(path.points) == len(svg_points) and len(path.points) % 3 == 1
        flat = [c for point in path.points for c in point]
        assert flat == pytest.approx([c for point in svg_points for c in point], abs=0.1)
        assert path.arrow_start == path.points[-1]
        assert path.arrow_end is not None and path.arrow_end != path.arrow_start


@pytest.mark.parametrize("name", ["d2l_objective", "d2l_mlp_scalar", "fork"])
def test_every_backward_step_has_the_final_pictures_layout(example, name):
    G = example(name)
    final, plain = layout(G, legend=False), layout(G)
    steps = backward_steps(G)
    for step in range(len(G.graph["backward_order"]) + 1):
        now = layout(G, step=step, legend=False)
        assert (now.width, now.height) == (final.width, final.height)
        assert now.nodes == final.nodes, step
        # The step's own operand edges end in a backward arrowhead at the
        # operand as well, which shortens them there; every other edge is as drawn.
        own = set(steps[step - 1].edges) if step else set()
        # A share not sent yet has its badge unseen, and its edge runs on through the
        # badge's middle, unbroken: the same from its operand to its op, joined where
        # the final picture leaves the badge between its two pieces.
        pending = {edge for later in steps[step:] for edge in later.edges
                   if final.edges[edge].badge}
        assert {k: e for k, e in now.edges.items() if k not in own | pending} == \
            {k: e for k, e in final.edges.items() if k not in own | pending}, step
        for edge in pending - own:
            ends = [*now.edges[edge].points[0], *now.edges[edge].arrow_end]
            assert ends == pytest.approx([*final.edges[edge].points[0],
                                          *final.edges[edge].arrow_end], abs=0.5), edge
        # With the legend, a step adds its caption band beneath the drawing (and
        # centres a narrower drawing over it): every box moves by one offset.
        banded = layout(G, step=step)
        assert banded.height > plain.height
        offsets = {(round(banded.nodes[node].x - box.x, 1), round(banded.nodes[node].y - box.y, 1))
                   for node, box in plain.nodes.items()}
        assert len(offsets) == 1, step


def test_fork_contributions_have_label_positions(example):
    G = example("fork")
    result = layout(G)
    labelled = [key for key, path in result.edges.items() if path.label is not None]
    assert sorted(labelled) == sorted((u, v, k) for u, v, k, g in G.edges(keys=True, data="grad")
                                      if g is not None)
