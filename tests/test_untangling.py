"""Untangling: where dot's own layout crosses two edges, the hint that undoes it."""

from __future__ import annotations

import json

import pytest

from backpropviz.crossings import count_crossings
from backpropviz.dot import Writer, dot_options
from backpropviz.figure import to_dot
from backpropviz.graphviz import run_dot
from backpropviz.steps import state_at
from backpropviz.untangling import untangled
from backpropviz.views import drawn_graph


def crossings(source: str) -> int:
    return count_crossings(json.loads(run_dot(source, "json")))


def dots_own(G, **options) -> str:
    """The DOT of ``G`` as written before untangling."""
    return Writer(G, dot_options(**options), state_at(G, None)).dot()


def op_of(G, symbol: str) -> str:
    (op,) = [node for node, attrs in G.nodes(data=True) if attrs.get("symbol") == symbol
             and any(G.nodes[u].get("label") == "W2" for u in G.predecessors(node))]
    return op


def test_an_operator_whose_operand_order_crosses_lets_it_go(example):
    # o = W2 @ h: kept in argument order, W2 (above h) sends its edge across
    # ReLU -> h, for W2 also feeds ‖W2‖², below the chain.
    G = drawn_graph(example("d2l_objective"))
    assert crossings(dots_own(G)) == 1
    options = untangled(G, dot_options())
    product = op_of(G, "@")
    assert product in options.free_order and not options.ranked_after
    source = to_dot(G)
    assert crossings(source) == 0
    lines = {line.split()[0].strip('"'): line for line in source.splitlines()
             if line.strip().startswith('"op') and "->" not in line}
    assert 'ordering="in"' not in lines[product]
    # the other ops keep their operands in order (o − y, Σ/2)
    assert sum('ordering="in"' in line for line in lines.values()) >= 3


def test_two_inputs_each_feeding_two_sums_are_a_rank_apart(example):
    # x1 and x2 each feed z1 and z2: side by side, one of their edges crosses
    # another whatever the order; with one a rank on, it sits between the other's.
    for compact in (False, True):
        G = drawn_graph(example("d2l_mlp_scalar"), compact_view=compact)
        assert crossings(dots_own(G)) == 1
        options = untangled(G, dot_options())
        (later,) = options.ranked_after
        assert {G.nodes[node]["label"] for node in later} == {"x1", "x2"}
        assert crossings(to_dot(G)) == 0
        assert f'"{later[0]}" -> "{later[1]}" [style="invis"' in to_dot(G)


@pytest.mark.parametrize("name", ["d2l_mlp", "fork", "capstone/forked_neuron"])
def test_a_layout_that_crosses_nothing_is_left_as_it_is(example, name):
    # (a tree, d2l_mlp's, is not even laid out: dot draws one without a crossing)
    G = drawn_graph(example(name))
    options = dot_options()
    assert untangled(G, options) is options
    assert crossings(to_dot(G)) == 0
