"""The IR: built from every example, checked by validate, replayed, and round-tripped."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from backpropviz import Tensor, Value
from backpropviz.engine import Node, topological_order
from backpropviz.ir import (
    IRError,
    from_graphml,
    from_node_link,
    to_graphml,
    to_networkx,
    to_node_link,
    validate,
)
from backpropviz.steps import backward_steps, gradient_history

ROOT = Path(__file__).resolve().parent.parent
ENGINE_EXAMPLES = sorted(path.name for path in (ROOT / "examples").glob("*.py")
                         if "from backpropviz import" in path.read_text())
TRAINING_LOOPS = ["training_loop.py"]


def outputs_of(namespace: dict) -> list[Node]:
    """The script's nodes that no other node of the script depends on."""
    nodes = list({id(v): v for v in namespace.values() if isinstance(v, Node)}.values())
    below = {id(n) for node in nodes for n in topological_order([node]) if n is not node}
    return [node for node in nodes if id(node) not in below]


@pytest.fixture(scope="module")
def engine_graph(example_names):
    """``engine_graph("d2l_mlp.py")``: to_networkx of the example's outputs, and its names."""
    def build(name: str) -> tuple[nx.MultiDiGraph, dict]:
        namespace = example_names(name.removesuffix(".py"))
        return to_networkx(*outputs_of(namespace), names=namespace), namespace
    return build


@pytest.fixture(scope="module")
def graphs(engine_graph) -> dict[str, tuple[nx.MultiDiGraph, dict]]:
    return {name: engine_graph(name) for name in ENGINE_EXAMPLES}


def values(G: nx.MultiDiGraph) -> list:
    return [node for node, kind in G.nodes(data="kind") if kind == "value"]


def test_the_seed_examples_are_all_here():
    assert {"add_mul.py", "d2l_mlp.py", "d2l_mlp_scalar.py", "d2l_objective.py",
            "fork.py"} <= set(ENGINE_EXAMPLES)


@pytest.mark.parametrize("name", ENGINE_EXAMPLES)
def test_every_example_gives_a_valid_graph(graphs, name):
    G, _ = graphs[name]
    validate(G)
    assert len(G.graph["roots"]) == 1
    ops = [node for node, kind in G.nodes(data="kind") if kind == "op"]
    # Every op was processed once, results before operands (ids follow creation).
    assert sorted(G.graph["backward_order"]) == sorted(ops)
    assert G.graph["backward_order"] == sorted(ops, key=lambda op: -int(op[2:]))
    assert G.graph["seeds"] == {G.graph["roots"][0]: 1.0}


def test_ids_and_attributes_do_not_depend_on_what_ran_before(graphs, engine_graph):
    Value(1.0) * Value(2.0)  # other nodes created first shift the engine's counter
    G, _ = engine_graph("d2l_mlp.py")
    assert to_node_link(G) == to_node_link(graphs["d2l_mlp.py"][0])


SCRIPT = """
import json, runpy, sys
from backpropviz.ir import to_networkx, to_node_link
namespace = runpy.run_path(sys.argv[1])
G = to_networkx(namespace[sys.argv[2]], names=namespace)
print(json.dumps(to_node_link(G), sort_keys=True))
"""


@pytest.mark.parametrize(("name", "root"), [("d2l_mlp.py", "L"), ("d2l_mlp_scalar.py", "L")])
def test_ids_and_attributes_are_the_same_in_another_process(graphs, name, root):
    runs = [subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "examples" / name), root],
                           capture_output=True, text=True, check=True).stdout.splitlines()[-1]
            for _ in range(2)]
    assert runs[0] == runs[1]
    G = graphs[name][0]
    assert json.loads(runs[0]) == json.loads(json.dumps(to_node_link(G)))


def assert_same_graph(G: nx.MultiDiGraph, H: nx.MultiDiGraph) -> None:
    assert list(H.nodes(data=True)) == list(G.nodes(data=True))
    assert list(H.edges(keys=True, data=True)) == list(G.edges(keys=True, data=True))
    assert H.graph == G.graph
    for _, attrs in H.nodes(data=True):
        if attrs["kind"] == "value":
            assert type(attrs["shape"]) is tuple


def unfinished(name: str) -> list[nx.MultiDiGraph]:
    """An example's graph as its script left it before backward: none for a training
    loop, which updates with its gradients."""
    if name in TRAINING_LOOPS:
        return []
    source = (ROOT / "examples" / name).read_text()
    namespace: dict = {}
    exec(source.replace(".backward()", ".data"), namespace)
    return [to_networkx(*outputs_of(namespace), names=namespace)]


@pytest.mark.parametrize("name", ENGINE_EXAMPLES)
def test_node_link_round_trip_is_exact(graphs, name, capsys):
    for G in (graphs[name][0], *unfinished(name)):
        assert_same_graph(G, from_node_link(to_node_link(G)))
        assert_same_graph(G, from_node_link(json.loads(json.dumps(to_node_link(G)))))
    capsys.readouterr()


@pytest.mark.parametrize("name", ENGINE_EXAMPLES)
def test_graphml_round_trip_is_exact(graphs, name, capsys):
    for G in (graphs[name][0], *unfinished(name)):
        text = to_graphml(G)
        assert "<graphml" in text
        assert_same_graph(G, from_graphml(text))
    capsys.readouterr()


# ---------------------------------------------------------------- validate


def broken(mutate) -> nx.MultiDiGraph:
    a, b, c = Value(2.0), Value(1.0), Value(-3.0)
    e = (a + b) * c
    e.backward()
    G = to_networkx(e)  # v0 a, v1 b -> op0 (+) -> v3 d; v3, v2 c -> op1 -> v4 e
    mutate(G)
    return G


def _second_result(G):
    G.add_node("v9", **{**G.nodes["v0"], "role": "intermediate"})
    G.add_edge("op0", "v9", key=0)


def _cycle(G):
    # e feeds the first op as a third operand: e -> op0 -> d -> op1 -> e.
    G.add_edge("v4", "op0", key=2, arg=2, grad=None)


MUTATIONS = {
    "missing attribute": (lambda G: G.nodes["v0"].pop("data"), r"'v0' has no 'data'"),
    "bad shape": (lambda G: G.nodes["v0"].update(shape=(3,)),
                  r"'v0': data has shape \(\), expected \(3,\)"),
    "shape not a tuple": (lambda G: G.nodes["v0"].update(shape=[]), r"'v0': shape must be a tuple"),
    "grad of the wrong shape": (lambda G: G.nodes["v0"].update(grad=[1.0, 2.0]),
                                r"'v0': grad has shape \(2,\)"),
    "non-numeric data": (lambda G: G.nodes["v0"].update(data="two"), r"'v0': data must be"),
    "op with two results": (_second_result, r"'op0' has 2 results"),
    "value with two producers": (lambda G: G.add_edge("op1", "v3", key=0),
                                 r"'v3' is the result of 2 ops"),
    "cycle": (_cycle, r"cycle"),
    "bad role": (lambda G: G.nodes["v0"].update(role="weight"),
                 r"'v0': role must be one of \['input', 'param', 'const', 'intermediate', "
                 r"'output'\], got 'weight'"),
    "role against structure": (lambda G: G.nodes["v3"].update(role="input"),
                               r"'v3': role 'input' does not match its producing op"),
    "unknown kind": (lambda G: G.nodes["v0"].update(kind="function"),
                     r"'v0': kind must be 'value' or 'op'"),
    "missing arg": (lambda G: G.edges["v1", "op0", 1].update(arg=5),
                    r"'op0': operand edges must carry arg 0..1, got \[0, 5\]"),
    "value to value edge": (lambda G: G.add_edge("v0", "v1", key=0), r"joins two values"),
    "backward_order names a value": (lambda G: G.graph.update(backward_order=["op1", "v0"]),
                                     r"backward_order names 'v0', which is not an op"),
    "backward_order repeats an op": (lambda G: G.graph.update(backward_order=["op1", "op1"]),
                                     r"backward_order' lists an op twice"),
    "backward_order missing": (lambda G: G.graph.pop("backward_order"), r"'backward_order'"),
    "root not a value": (lambda G: G.graph.update(roots=["op1"]), r"root 'op1' is not a value"),
    "no roots": (lambda G: G.graph.update(roots=[]), r"'roots' must be a non-empty list"),
    "an output that is not a root": (lambda G: G.nodes["v0"].update(role="output"),
                                     r"role 'output' \(\['v0', 'v4'\]\) must be the graph's "
                                     r"roots \(\['v4'\]\)"),
    "a root that is not an output": (lambda G: G.graph.update(roots=["v4", "v3"]),
                                     r"must be the graph's roots"),
}


def test_a_lone_value_is_a_graph_of_its_own():
    a = Value(2.0, label="a")
    G = to_networkx(a)
    validate(G)
    assert dict(G.nodes(data="role")) == {"v0": "output"}
    assert G.nodes["v0"]["grad"] is None
    a.backward()
    G = to_networkx(a)
    validate(G)
    assert G.nodes["v0"]["grad"] == 1.0 and G.graph["backward_order"] == []


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_validate_rejects_a_broken_graph_with_a_clear_message(case, capsys):
    mutate, message = MUTATIONS[case]
    G = broken(mutate)
    with pytest.raises(IRError, match=message):
        validate(G)
    capsys.readouterr()


def test_validate_rejects_what_is_not_the_ir():
    with pytest.raises(IRError, match="MultiDiGraph, got DiGraph"):
        validate(nx.DiGraph())


# ---------------------------------------------------------------- gradients


def test_per_edge_gradients_add_up_at_the_fork(graphs):
    G, _ = graphs["fork.py"]
    a = next(v for v in values(G) if G.nodes[v]["label"] == "a")
    contributions = [data["grad"] for _, _, data in G.out_edges(a, data=True)]
    assert contributions == [12.0, 12.0]  # b = a + a: each edge passes dc/db = 12
    assert sum(contributions) == G.nodes[a]["grad"] == 24.0
    step = next(s for s in backward_steps(G) if a in s.updated)
    assert step.accumulated == (a,)  # the second edge used +=


@pytest.mark.parametrize("name", ENGINE_EXAMPLES)
def test_edge_gradients_sum_to_node_gradients(graphs, name):
    G, _ = graphs[name]
    seeds = G.graph["seeds"]
    for v in values(G):
        incoming = [data["grad"] for _, _, data in G.out_edges(v, data=True)]
        if v in seeds:
            incoming.append(seeds[v])
        total = np.sum([np.asarray(g, dtype=float) for g in incoming], axis=0)
        np.testing.assert_allclose(total, G.nodes[v]["grad"], rtol=1e-12)


def test_gradient_history_holds_each_running_sum_in_the_order_backward_added_it():
    w, x = Value(2.0), Value(3.0)
    p = w * x  # 6
    q = w * w  # 4: w used twice by one op
    L = p + q  # dL/dw = x + 2w = 7, by hand
    L.backward()
    G = to_networkx(L, names=locals())
    by_name = {G.nodes[v]["label"]: v for v in values(G)}
    history = gradient_history(G)
    # Backward runs L's add, then q = w·w (made after p): w gets 2 + 2 at
    # once; then p = w·x adds x = 3.
    assert history[by_name["w"]] == [4.0, 7.0]
    assert history[by_name["x"]] == [2.0]
    assert [history[by_name[name]] for name in ("p", "q", "L")] == [[1.0], [1.0], [1.0]]


@pytest.mark.parametrize("name", ENGINE_EXAMPLES)
def test_gradient_history_ends_at_the_engines_own_gradients(graphs, name):
    G, namespace = graphs[name]
    engine_nodes = topological_order(outputs_of(namespace))  # value ids follow this order
    history = gradient_history(G)
    for node, v in zip(engine_nodes, values(G), strict=True):
        np.testing.assert_array_equal(history[v][-1], node.grad)


@pytest.mark.parametrize("name", ENGINE_EXAMPLES)
def test_backward_steps_running_sums_end_at_the_final_gradients(graphs, name):
    G, _ = graphs[name]
    steps = backward_steps(G)
    assert [step.op for step in steps] == G.graph["backward_order"]
    assert [step.index for step in steps] == list(range(1, len(steps) + 1))
    final = steps[-1].grads
    assert final == {v: G.nodes[v]["grad"] for v in values(G)}
    # Each step adds what its edges sent to the running sums, and says which
    # sums already existed (a fork: +=).
    before: dict = dict(G.graph["seeds"])
    for step in steps:
        assert step.result in before  # its gradient was complete before the op ran
        sent: dict = {}
        for u, v, k in step.edges:
            sent.setdefault(u, []).append(G.edges[u, v, k]["grad"])
        assert step.updated == tuple(sent)
        for v, contributions in sent.items():
            assert (v in step.accumulated) == (v in before or len(contributions) > 1)
            expected = functools.reduce(np.add, contributions, before.get(v, 0.0))
            np.testing.assert_allclose(step.grads[v], expected, rtol=1e-12)
        before = dict(step.grads)


@pytest.mark.parametrize("kind", [Value, lambda x: Tensor([x])])
def test_two_passes_from_two_roots_are_ordered_pass_by_pass(kind):
    x = kind(2.0)
    u = x * 3.0
    v = u + 1.0
    w = u * u
    v.backward(None if kind is Value else np.ones(1))  # processes v's op, then u's
    w.backward(None if kind is Value else np.ones(1))  # processes w's op, then u's again
    G = to_networkx(v, w, names={"u": u, "v": v, "w": w})
    made = {G.nodes[next(iter(G.successors(op)))]["label"]: op
            for op in G.graph["backward_order"]}
    # v's op was last processed by the first pass; u's op, processed by both, by the second.
    assert G.graph["backward_order"] == [made["v"], made["w"], made["u"]]
    validate(G)


def test_seed_numbers_in_the_ir(graphs):
    G, _ = graphs["d2l_mlp.py"]
    by_label = {G.nodes[v]["label"]: G.nodes[v] for v in values(G)}
    assert by_label["L"]["data"] == 2.0 and by_label["L"]["role"] == "output"
    assert by_label["W1"]["grad"] == [[0.0, 0.0], [2.0, 4.0]]
    assert by_label["W2"]["grad"] == [[-0.0, -4.0]]
    assert by_label["h"]["grad"] == [-4.0, 2.0]
    assert by_label["z"]["grad"] == [0.0, 2.0]
    assert by_label["W1"]["role"] == "param" and by_label["x"]["role"] == "input"
    relu = next(op for op, name in G.nodes(data="op") if name == "relu")
    assert G.nodes[relu]["dead"] == [True, False]
    power = next(op for op, name in G.nodes(data="op") if name == "pow")
    assert G.nodes[power]["exponent"] == 2.0 and G.nodes[power]["symbol"] == "(·)²"


def test_grad_is_none_before_backward(capsys):
    [G] = unfinished("d2l_mlp.py")
    validate(G)
    assert all(G.nodes[v]["grad"] is None for v in values(G))
    assert all(data.get("grad") is None for _, _, data in G.edges(data=True))
    assert G.graph["backward_order"] == [] and G.graph["seeds"] == {}
    assert backward_steps(G) == []
    capsys.readouterr()


def test_a_zero_gradient_is_not_a_missing_one():
    a, b = Value(0.0), Value(5.0)
    c = a * a + b
    c.backward()
    G = to_networkx(c, names={"a": a})
    label = {G.nodes[v]["label"]: G.nodes[v]["grad"] for v in values(G)}
    assert label["a"] == 0.0  # reached by backward, and 0


# ---------------------------------------------------------------- names and storage


def test_names_are_labels_then_the_scripts_names(graphs):
    G, _ = graphs["d2l_mlp.py"]
    labels = [G.nodes[v]["label"] for v in values(G)]
    # The const from `o - y` has no name (y is the number 0, not a node), nor
    # have the loss's unnamed steps.
    assert labels == ["x", "W1", "W2", "z", "h", "o", None, None, None, None, None, "L"]
    W = Tensor([1.0, 2.0])
    alias = W
    out = (W * 3).sum()
    G = to_networkx(out, names={"_private": W, "first": W, "second": alias})
    assert G.nodes["v0"]["label"] == "first"
    # An explicit label wins over the variable's name, written as it was given.
    W.label = "x1*w1 + b"
    assert to_networkx(out, names={"first": W}).nodes["v0"]["label"] == "x1*w1 + b"
    assert to_networkx(out, names={"unrelated": 3}).nodes["v0"]["label"] == "x1*w1 + b"


def test_stored_values_are_what_each_backward_rule_reads():
    a, b, c = Value(2.0), Value(-1.0), Value(0.5)
    p = a * b  # d(ab) reads a and b
    r = p.relu()  # the gate reads its input p
    t = c.tanh()  # tanh' = 1 - tanh² reads its own result t
    y = r + t  # add reads nothing
    y.backward()
    G = to_networkx(y, names=locals())
    stored = {G.nodes[v]["label"] for v in values(G) if G.nodes[v]["stored"]}
    assert stored == {"a", "b", "p", "t"}
    assert all(G.nodes[v]["nbytes"] == (8 if G.nodes[v]["stored"] else 0) for v in values(G))
    assert G.graph["stored_bytes"] == 32
    X = Tensor(np.ones((3, 2)))
    W = Tensor(np.ones((2, 4)), label="W")
    out = (X @ W).sum()
    G = to_networkx(out)
    assert [G.nodes[v]["nbytes"] for v in values(G)] == [48, 64, 0, 0]  # X and W, 8 bytes each


def test_the_mlp_stores_its_hidden_layer(graphs):
    G, _ = graphs["d2l_mlp.py"]
    by_label = {G.nodes[v]["label"]: G.nodes[v] for v in values(G)}
    # The seed: backward reuses the stored intermediates h and z.
    assert by_label["z"]["stored"] and by_label["h"]["stored"]
    assert by_label["W1"]["nbytes"] == 32 and by_label["z"]["nbytes"] == 16
    assert not by_label["L"]["stored"] and by_label["L"]["nbytes"] == 0


def test_a_times_a_is_two_edges_in_the_ir():
    a = Value(3.0)
    b = a * a
    b.backward()
    G = to_networkx(b, names={"a": a, "b": b})
    assert sorted(G.out_edges("v0", keys=True)) == [("v0", "op0", 0), ("v0", "op0", 1)]
    assert [G.edges["v0", "op0", k]["grad"] for k in (0, 1)] == [3.0, 3.0]


def test_to_networkx_needs_nodes():
    with pytest.raises(IRError, match="at least one root"):
        to_networkx()
    with pytest.raises(TypeError, match="float"):
        to_networkx(1.5)
