"""The JSON exports are the data the standard library would write, a node, an edge or an
update a line, and strict (no NaN): the IR's, a training run's, any nesting of
numbers with a non-finite one deep inside."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from backpropviz import Value
from backpropviz.ir import to_json, to_networkx, to_node_link
from backpropviz.json_text import json_text
from backpropviz.schema import encode_json


@pytest.mark.parametrize("name", ["add_mul", "d2l_mlp", "mlp3", "training_loop"])
def test_the_irs_json_is_the_standard_librarys_a_node_or_an_edge_a_line(example, name):
    G = example(name)
    text = to_json(G)
    data = to_node_link(G)
    assert json.loads(text) == json.loads(json.dumps(data, allow_nan=False))
    lines = text.splitlines()
    for kind in ("nodes", "edges"):
        start = lines.index(f' "{kind}": [')
        rows = lines[start + 1:start + 1 + len(data[kind])]
        assert [json.loads(row.strip().rstrip(",")) for row in rows] == \
            json.loads(json.dumps(data[kind]))
    assert len(lines) < len(data["nodes"]) + len(data["edges"]) + 40


def test_a_training_runs_json_is_its_data_a_node_a_line(tmp_path):
    from backpropviz.training import Iteration, Run, Update
    from backpropviz.training_json import from_json, to_training_data
    from backpropviz.training_json import to_json as run_json

    w = Value(0.5, label="w")
    loss = (w * 3.0 - 1.0) ** 2
    loss.backward()
    G = to_networkx(loss)
    run = Run([Iteration(0, loss.data, G, {"w": Update(0.5, w.grad, 0.5 - 0.1 * w.grad, 0.1)})],
              every=1, total=1, notes=["a note"])
    text = run_json(run)
    assert json.loads(text) == json.loads(json.dumps(to_training_data(run), allow_nan=False))
    node_lines = [line for line in text.splitlines() if '"kind": "value"' in line]
    assert len(node_lines) == sum(a["kind"] == "value" for _, a in G.nodes(data=True))
    assert from_json(text).iterations[0].parameters == run.iterations[0].parameters


def test_numbers_not_finite_are_named_at_any_depth_and_nothing_else_changes():
    nan, inf = float("nan"), float("inf")
    deep = [[[1.0, 2.0], [3.0, nan]], [[inf, -inf], [0.5, 1e308]]]
    attrs = {"data": deep, "grad": np.array([[1.0, np.nan], [2.0, 3.0]]), "label": "x",
             "shape": [2, 2]}
    encoded = encode_json("node", attrs)
    assert encoded["data"] == [[[1.0, 2.0], [3.0, "NaN"]], [["Infinity", "-Infinity"],
                                                             [0.5, 1e308]]]
    assert encoded["grad"] == [[1.0, "NaN"], [2.0, 3.0]]
    assert encoded["label"] == "x" and encoded["shape"] == [2, 2]
    # Rows that are not all numbers, or ragged, or too large for a float, as they were.
    for odd in (["1.5", "NaN", None], [[1.0, 2.0], [3.0]], [10 ** 400, 1.0], [True, 2]):
        assert encode_json("node", {"data": odd})["data"] == odd
    finite = [[1.0, 2.0], [3.0, 4.0]]
    assert encode_json("node", {"data": finite})["data"] == finite
    # A large tensor's numbers among lists (an array at any depth) are written as lists.
    arrays = encode_json("node", {"data": [np.ones(2), [np.zeros(2)]]})["data"]
    assert arrays == [[1.0, 1.0], [[0.0, 0.0]]]
    assert json.loads(json.dumps(arrays)) == arrays


def test_a_number_not_finite_left_in_the_data_is_refused_not_written():
    with pytest.raises(ValueError):
        json_text({"nodes": [{"data": [1.0, math.nan]}]}, depth=2)
    assert json.loads(json_text({"a": [{"b": [1, 2]}], "c": {}}, depth=3)) == \
        {"a": [{"b": [1, 2]}], "c": {}}
