"""The IR's schema (every attribute declared once), the one builder, and the producers' list."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from backpropviz import Tensor, Value, group, script
from backpropviz.builder import Builder, Producer
from backpropviz.check import check_script
from backpropviz.ir import from_graphml, from_node_link, to_graphml, to_json, to_networkx
from backpropviz.page_groups import opened_groups
from backpropviz.producers import PRODUCERS
from backpropviz.rolling import find_loop, rolled
from backpropviz.schema import (
    ATTRIBUTES,
    EDGE,
    GRAPH,
    OP,
    RESULT,
    VALUE,
    IRError,
    contract_rst,
    validate,
)
from backpropviz.script import graph_of_namespace, graph_of_script
from backpropviz.views import drawn_graph

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ROOT / "tests" / "engines"


def places_of(G: nx.MultiDiGraph) -> dict[str, set[str]]:
    """The attribute names a graph uses, by place."""
    seen: dict[str, set[str]] = {place: set() for place in (VALUE, OP, EDGE, RESULT, GRAPH)}
    seen[GRAPH].update(G.graph)
    for _, attrs in G.nodes(data=True):
        seen[attrs["kind"]].update(attrs)
    for u, _, attrs in G.edges(data=True):
        seen[EDGE if G.nodes[u]["kind"] == "value" else RESULT].update(attrs)
    return seen


def engine_graphs() -> list[nx.MultiDiGraph]:
    """The engine's graphs with every attribute it sets: groups, dropout's mask, an axis and
    an index kept, two backward passes, a backward pass entered from a later value."""
    W = Tensor([[1.0, -1.0], [0.5, 2.0]], label="W", requires_grad=True)
    x = Tensor([1.0, -2.0], label="x")
    with group("layer"):
        bias = Tensor([0.1, 0.2], label="bias")  # a leaf made inside the group belongs to it
        h = (W @ x + bias).relu()
    d = h.dropout(0.5, seed=1)
    L = ((d.sum(axis=0, keepdims=True) * 2.0) ** 2).sum() + h[1]  # (an index kept)
    L.label = "L"
    L.backward()
    L.backward()  # twice: each gradient sums two passes
    a = Value(2.0, label="a")
    b = a * 3.0
    b.label = "b"
    (b + 1.0).backward()  # from beyond b: b's gradient enters from a later value
    return [to_networkx(L), to_networkx(b)]


def all_graphs(monkeypatch: pytest.MonkeyPatch) -> list[nx.MultiDiGraph]:
    graphs = engine_graphs()
    G = graphs[0]
    graphs.append(drawn_graph(G))  # the group closed: a view with its members
    # the inside of each closed group, as the page opens it (differentiated)
    opened_groups(G, graphs[-1], lambda inner: graphs.append(inner) or {})
    graphs.append(graph_of_script(ENGINES / "neuron.py", quiet=True))
    # a neuron's weighted sum folded into one + (remarks)
    graphs.append(graph_of_script(ROOT / "examples" / "scalar_neuron.py", quiet=True))
    # a training loop drawn without --iterations: its last pass (earlier_passes)
    graphs.append(graph_of_script(ROOT / "examples" / "training_loop.py", quiet=True))
    graphs.append(graph_of_script(ENGINES / "no_rule.py", quiet=True))  # unwatched
    monkeypatch.setenv("ENGINE", "Overwrites")  # a student's = instead of +=
    graphs.append(check_script(ENGINES / "graded.py").graph)  # expected, error_start
    sys.path.insert(0, str(ENGINES))
    try:
        from lecture import Value as LectureValue
    finally:
        sys.path.remove(str(ENGINES))
    a = LectureValue(3.0)
    a.label = "a"
    s = a + a  # kept as one child in the lecture's set: drawn with two edges
    graphs.append(graph_of_namespace({"a": a, "s": s}))
    u, v, h = Value(0.5, label="u"), Value(0.25, label="v"), Value(1.0, label="h0")
    w = v * 2  # made before the loop: loop_after
    w.label = "w"
    for t, x in enumerate((1.0, -2.0, 0.5)):  # a loop, rolled: its count, step, back edge,
        h = (w * h + u * Value(x, label=f"x[{t}]")).tanh()  # numbers, inputs' own names
    h.backward()
    graphs.append(rolled(to_networkx(h), find_loop(to_networkx(h)), 0))  # (and loop_before)
    # (and, drawn at a later repetition, the closing step's loop_rest and shares)
    graphs.append(rolled(to_networkx(h), find_loop(to_networkx(h)), 1))
    # (an engine whose order mixes the repetitions: loop_mixed)
    mixed = graph_of_script(ROOT / "tests" / "loop_scripts" / "stack_engine_rnn.py", quiet=True)
    graphs.append(rolled(mixed, find_loop(mixed)))
    if "torch" in sys.modules or _has_torch():
        graphs.append(graph_of_script(ROOT / "tests" / "torch_scripts" / "sequential.py",
                                      quiet=True))
        # (modules holding their parameters: parameters, their names and gradients)
        graphs.append(drawn_graph(graph_of_script(
            ROOT / "tests" / "torch_scripts" / "wide_sequential.py", quiet=True), modules=True))
        # (a loop that never resets .grad: what the passes not drawn left, held_before)
        graphs.append(graph_of_script(ROOT / "tests" / "torch_scripts" / "never_reset.py",
                                      quiet=True))
        # (two backward() calls drawn together: backward_passes)
        graphs.append(graph_of_script(ROOT / "tests" / "torch_scripts" / "two_losses.py",
                                      quiet=True))
    return graphs


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def test_every_attribute_the_producers_views_and_check_set_is_declared_and_used(capsys,
                                                                                monkeypatch):
    seen: dict[str, set[str]] = {}
    for G in all_graphs(monkeypatch):
        validate(G)  # every attribute declared, of its kind
        for place, names in places_of(G).items():
            seen.setdefault(place, set()).update(names)
    capsys.readouterr()
    torch_only = {"module_groups", "module_classes", "inner_bytes", "backward_passes",
                  "parameters", "parameter_names", "parameter_grads"} \
        if not _has_torch() else set()
    for spec in ATTRIBUTES:  # and no declaration is stale: something sets each one
        if spec.name not in torch_only:
            assert spec.name in seen[spec.place], (spec.place, spec.name)


def test_the_declaration_names_each_attribute_once_per_place():
    pairs = [(spec.place, spec.name) for spec in ATTRIBUTES]
    assert len(pairs) == len(set(pairs))
    assert all(spec.meaning and spec.set_by for spec in ATTRIBUTES)


def small_graph() -> nx.MultiDiGraph:
    a = Value(2.0, label="a")
    b = Value(-3.0, label="b")
    c = a * b
    c.label = "c"
    c.backward()
    return to_networkx(c)  # v0 a, v1 b, op0 ×, v2 c


def _result_an_op(G: nx.MultiDiGraph) -> None:
    # op0 -> op1 -> v2: the product's result an op, which makes v2.
    G.add_node("op1", kind="op", op="neg", symbol="−")
    G.remove_edge("op0", "v2")
    G.add_edge("op0", "op1", key=0)
    G.add_edge("op1", "v2", key=0)


def _a_bool_position_last(G: nx.MultiDiGraph) -> None:
    edge = G.edges["v0", "op0", 0]
    del edge["arg"]
    edge.update(grad=None, arg=False)  # (checked with the edge's other attributes)


MUTATIONS = {
    "an undeclared node attribute": (lambda G: G.nodes["v0"].update(colour="red"),
                                     r"value node 'v0': unknown attribute 'colour' \(the "
                                     r"attributes of a value are: .*data.*\)"),
    "an undeclared op attribute": (lambda G: G.nodes["op0"].update(label="x"),
                                   r"op node 'op0': unknown attribute 'label'"),
    "an undeclared graph attribute": (lambda G: G.graph.update(rankdir="LR"),
                                      r"the graph: unknown attribute 'rankdir'"),
    "an attribute on a result edge": (lambda G: G.edges["op0", "v2", 0].update(grad=1.0),
                                      r"edge 'op0' -> 'v2': unknown attribute 'grad'"),
    "stored not a bool": (lambda G: G.nodes["v0"].update(stored="yes"),
                          r"'v0': stored must be a bool, got 'yes'"),
    "negative bytes": (lambda G: G.nodes["v0"].update(nbytes=-8),
                       r"nbytes must be an int ≥ 0, got -8"),
    "saves names an op": (lambda G: G.nodes["op0"].update(saves=["op0"]),
                          r"saves names 'op0', which is not a value node"),
    "seeds name an op": (lambda G: G.graph.update(seeds={"op0": 1.0}),
                         r"'seeds' names 'op0', which is not a value node"),
    "a running sum of the wrong shape": (
        lambda G: G.edges["v0", "op0", 0].update(running=[1.0, 2.0]),
        r"edge 'v0' -> 'op0': running has shape \(2,\), expected \(\)"),
    "notes not a list": (lambda G: G.graph.update(notes="a note"),
                         r"notes must be a list of strings"),
    "a group that is not a list of names": (lambda G: G.nodes["op0"].update(group="l"),
                                            r"group must be a list of strings"),
    "expected of the wrong shape": (lambda G: G.nodes["v0"].update(expected=[1.0]),
                                    r"expected has shape \(1,\), expected \(\)"),
    "an edge without its position": (lambda G: G.edges["v0", "op0", 0].pop("arg"),
                                     r"'op0': operand edges must carry arg 0..1, got \[-1, 1\]"),
    # (what the common cases pass by without the declaration's loop: looked at still)
    "an undeclared operand edge attribute holding a float": (
        lambda G: G.edges["v0", "op0", 0].update(weight=1.0),
        r"edge 'v0' -> 'op0': unknown attribute 'weight' \(the attributes of a edge are: "
        r"arg, grad, running\)"),
    "a contribution that is not a number": (
        lambda G: G.edges["v1", "op0", 1].update(grad="x"),
        r"edge 'v1' -> 'op0': grad must be a float, nested lists of floats \(an array if "
        r"large\), or None, got 'x'"),
    "a label that is not a string": (lambda G: G.nodes["v0"].update(label=3),
                                     r"^value node 'v0': label must be a string or None$"),
    "a leaf with an op's role": (lambda G: G.nodes["v1"].update(role="intermediate"),
                                 r"^value node 'v1': role 'intermediate' does not match its "
                                 r"lack of a producing op$"),
    "nbytes not a count, stored present": (lambda G: G.nodes["v1"].update(stored=True,
                                                                          nbytes=2.5),
                                           r"^value node 'v1': nbytes must be an int ≥ 0, "
                                           r"got 2.5$"),
    "an op name that is not a string": (lambda G: G.nodes["op0"].update(op=3),
                                        r"^op node 'op0': 'op' must be a string$"),
    "saves not a list of ids": (lambda G: G.nodes["op0"].update(saves="v0"),
                                r"^op node 'op0': saves must be a list of node ids, got 'v0'$"),
    "an op without its result": (lambda G: G.remove_edge("op0", "v2"),
                                 r"^op node 'op0' has 0 results; an op has exactly one$"),
    "an op whose result is an op": (_result_an_op,
                                    r"^op node 'op0': its result 'op1' is not a value node$"),
    # (what Python's own sort, set and == would have failed on with a TypeError)
    "a position that is a string among ints": (
        lambda G: G.edges["v1", "op0", 1].update(arg="1"),
        r"^edge 'v1' -> 'op0': arg must be an int, got '1'$"),
    "a position that is a float": (lambda G: G.edges["v0", "op0", 0].update(arg=0.0),
                                   r"^edge 'v0' -> 'op0': arg must be an int, got 0.0$"),
    "a position that is a bool, after a contribution not a float": (
        _a_bool_position_last, r"^edge 'v0' -> 'op0': arg must be an int, got False$"),
    "an unhashable op in the backward order": (
        lambda G: G.graph.update(backward_order=[["op0"]]),
        r"^graph attribute 'backward_order' holds \['op0'\], which is not a node id "
        r"\(a string or an int\)$"),
    "an unhashable root": (lambda G: G.graph.update(roots=["v2", {}]),
                           r"^graph attribute 'roots' holds \{\}, which is not a node id"),
    "seeds that are a float": (lambda G: G.graph.update(seeds=1.0),
                               r"^the graph: seeds must be a dict: value id -> a float or "
                               r"nested lists, got 1.0$"),
    "a kind that is an array": (lambda G: G.nodes["op0"].update(kind=np.array([1, 2])),
                                r"^node 'op0': kind must be 'value' or 'op', got array"),
    "a role that is an array": (lambda G: G.nodes["v0"].update(role=np.array([1, 2])),
                                r"^value node 'v0': role must be one of .*, got array"),
}


@pytest.mark.parametrize("entries", [[None], ["1.5"], [True], [1.0, [2.0]], [1.0, 2, False],
                                     [2.5, np.float32(1.5)]])
def test_a_tensors_numbers_that_are_no_numbers_are_refused(entries):
    # np.array(..., float) would read None as nan, "1.5" as 1.5 and True as 1.0.
    t = Tensor([1.0] * len(entries), label="t")
    s = (t * t).sum()
    s.backward()
    G = to_networkx(s)
    validate(G)
    G.nodes["v0"]["data"] = entries
    with pytest.raises(IRError, match=r"^value node 'v0': data must be a float or nested "
                                      r"lists of floats, got list$"):
        validate(G)


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_validate_checks_every_attribute_from_the_declaration(case):
    G = small_graph()
    validate(G)
    mutate, message = MUTATIONS[case]
    mutate(G)
    with pytest.raises(IRError, match=message):
        validate(G)


def assert_same(G: nx.MultiDiGraph, H: nx.MultiDiGraph) -> None:
    def same(x, y):  # NaN equal to NaN, at any depth
        if isinstance(x, float) and isinstance(y, float):
            return x == y or (math.isnan(x) and math.isnan(y))
        if isinstance(x, (list, tuple)) and type(x) is type(y) and len(x) == len(y):
            return all(map(same, x, y))
        if isinstance(x, dict) and isinstance(y, dict) and list(x) == list(y):
            return all(same(x[k], y[k]) for k in x)
        return x == y and type(x) is type(y)

    assert same(dict(G.nodes(data=True)), dict(H.nodes(data=True)))
    assert same([(u, v, k, d) for u, v, k, d in G.edges(keys=True, data=True)],
                [(u, v, k, d) for u, v, k, d in H.edges(keys=True, data=True)])
    assert same(dict(G.graph), dict(H.graph))


def test_every_attribute_round_trips_through_json_and_graphml(capsys, monkeypatch):
    graphs = all_graphs(monkeypatch)
    capsys.readouterr()
    nan = small_graph()
    nan.nodes["v0"]["data"] = math.nan
    nan.nodes["v1"]["grad"] = -math.inf
    for G in [*graphs, nan]:
        assert_same(G, from_node_link(to_json(G)))
        assert_same(G, from_graphml(to_graphml(G)))
    assert '"NaN"' in to_json(nan) and '"-Infinity"' in to_json(nan)


def test_the_contract_renders_as_rest_with_a_table_per_place():
    docutils_core = pytest.importorskip("docutils.core")
    text = contract_rst()
    tree = docutils_core.publish_doctree(text, settings_overrides={
        "report_level": 2, "halt_level": 2})  # a warning would raise
    tables = [node for node in tree.findall() if node.tagname == "table"]
    assert len(tables) == len({spec.place for spec in ATTRIBUTES})
    assert all(f"``{spec.name}``" in text for spec in ATTRIBUTES)
    value_table = text.split("Value nodes\n")[1].split("Op nodes\n")[0]
    assert "``data`` (required)" in value_table and "``members``" not in value_table


# ---------------------------------------------------------------- the builder


def test_the_builder_numbers_ids_in_the_order_made_and_derives_what_is_kept():
    build = Builder()
    build.add_value("a", data=2.0, shape=(), role="input", label="a")
    build.add_value("w", data=[1.0, 2.0], shape=(2,), role="param")
    build.add_op("mul", "mul", ["w", "a"], sent=[[2.0, 2.0], 3.0], running=[[2.0, 2.0], 3.0])
    build.add_value("y", data=[2.0, 4.0], shape=(2,), role="intermediate", made_by="mul")
    build.add_op("sq", "pow", ["y"], exponent=2.0)
    build.add_value("L", data=[4.0, 16.0], shape=(2,), role="output", made_by="sq")
    G = build.finish(["L"], backward_order=["mul"], seeds={"L": [1.0, 1.0]}, notes=["n"])
    validate(G)
    assert list(G) == ["v0", "v1", "op0", "v2", "op1", "v3"]
    assert G.nodes["op1"]["symbol"] == "(·)²" and G.nodes["op1"]["exponent"] == 2.0
    # mul reads both operands, a square with a number exponent its operand (the registry).
    assert G.nodes["op0"]["saves"] == ["v1", "v0"] and G.nodes["op1"]["saves"] == ["v2"]
    assert [G.nodes[v]["nbytes"] for v in ("v0", "v1", "v2", "v3")] == [8, 16, 16, 0]
    assert G.graph == {"roots": ["v3"], "backward_order": ["op0"], "seeds": {"v3": [1.0, 1.0]},
                       "stored_bytes": 40, "notes": ["n"]}
    assert G.edges["v1", "op0", 0] == {"arg": 0, "grad": [2.0, 2.0], "running": [2.0, 2.0]}
    assert G.edges["v2", "op1", 0] == {"arg": 0, "grad": None}


# ---------------------------------------------------------------- the producers' list


class Expression:
    """A framework the producers do not know: an op name and its operands, or a number."""

    def __init__(self, op: str | float, *operands: Expression) -> None:
        self.op, self.operands = op, operands


class ExpressionProducer(Producer):
    name = "expressions"
    reads_backward = True  # nothing runs backward: the IR holds the forward pass

    def claims(self, obj, recording):
        return isinstance(obj, Expression)

    def walk(self, nodes):
        return ({name: e for name, e in nodes.items() if e.operands},
                lambda e: list(e.operands))

    def build(self, roots, names, recording, backward):
        build, order = Builder(), []

        def visit(e):  # operands before results
            if all(e is not done for done in order):
                for operand in e.operands:
                    visit(operand)
                order.append(e)
        for root in roots:
            visit(root)
        label = {id(obj): name for name, obj in (names or {}).items()}
        values = {}
        for e in order:
            if e.operands:
                build.add_op(e, e.op, e.operands)
                values[e] = sum(values[x] for x in e.operands) if e.op == "add" else \
                    math.prod(values[x] for x in e.operands)
            else:
                values[e] = float(e.op)
            build.add_value(e, data=values[e], shape=(), label=label.get(id(e)),
                            role="output" if e in roots else "intermediate" if e.operands
                            else "input", made_by=e if e.operands else None)
        return build.finish(roots)


def test_a_new_framework_is_one_producer_and_one_line_in_the_list(monkeypatch):
    x, y = Expression(2.0), Expression(3.0)
    namespace = {"x": x, "y": y, "z": Expression("mul", Expression("add", x, y), y)}
    with pytest.raises(script.ScriptError, match="no graph found"):
        graph_of_namespace(namespace)
    monkeypatch.setattr(script, "PRODUCERS", (*PRODUCERS, ExpressionProducer()))
    G = graph_of_namespace(namespace)  # roots found, IR built and validated by the front end
    assert [(G.nodes[n].get("label"), G.nodes[n].get("op")) for n in G] == [
        ("x", None), ("y", None), (None, "add"), (None, None), (None, "mul"), ("z", None)]
    assert G.nodes["v2"]["data"] == 5.0 and G.nodes["v3"]["data"] == 15.0
    assert G.graph["roots"] == ["v3"]


def test_every_producer_keeps_its_own_package_and_the_list_starts_with_the_engine():
    assert PRODUCERS[0].claims(Value(1.0), None)
    assert [producer.package for producer in PRODUCERS] == ["backpropviz", "torch", None]
    assert script.may_use_another_engine("import math") is True
    assert script.may_use_another_engine("import torch") is False
