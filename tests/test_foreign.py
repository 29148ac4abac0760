"""Other engines' graphs: the lecture's Value class, micrograd itself, and students' classes.

The scripts and classes are in tests/engines/, written as students write them.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from backpropviz import Value, draw
from backpropviz.foreign import from_objects
from backpropviz.ir import from_node_link, validate
from backpropviz.steps import backward_steps
from tests.in_process import run_cli

ENGINES = Path(__file__).resolve().parent / "engines"
CLI = [sys.executable, "-m", "backpropviz"]


def render(script: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``backpropviz render SCRIPT ARGS`` in this process (tests/in_process.py), in the
    script's folder; what must differ between processes (hash seeds, ids) runs in its own."""
    return run_cli("render", script, *args, cwd=script.parent,
                   env={**os.environ, **(env or {})}, text=True)


def graph_of(script: Path, tmp_path: Path, env: dict | None = None):
    out = tmp_path / f"{script.stem}.json"
    done = render(script, "-o", str(out), env=env)
    assert done.returncode == 0, done.stderr
    G = from_node_link(json.loads(out.read_text()))
    validate(G)
    return G


def by_label(G) -> dict:
    return {attrs["label"]: attrs for _, attrs in G.nodes(data=True)
            if attrs["kind"] == "value" and attrs["label"]}


def test_the_lectures_neuron_is_drawn_with_its_labels_and_its_gradients(tmp_path):
    G = graph_of(ENGINES / "neuron.py", tmp_path)
    values = by_label(G)
    # o = tanh(n): do/dn = 1 - o², by hand; then + passes it on, × swaps the factors.
    o = math.tanh(2.0 * -3.0 + 0.0 * 1.0 + 6.8813735870195432)
    dn = 1 - o ** 2
    assert values["o"]["data"] == pytest.approx(o) and values["o"]["grad"] == 1.0
    expected = {"n": dn, "b": dn, "x1*w1 + x2*w2": dn, "x1*w1": dn, "x2*w2": dn,
                "x1": -3.0 * dn, "w1": 2.0 * dn, "x2": 1.0 * dn, "w2": 0.0}
    for name, grad in expected.items():
        assert values[name]["grad"] == pytest.approx(grad, abs=1e-12), name
    # Each edge carries what the lecture's own _backward added, and they sum to .grad.
    for node, attrs in G.nodes(data=True):
        if attrs["kind"] == "value" and G.out_degree(node):
            sent = sum(grad for _, _, grad in G.out_edges(node, data="grad"))
            assert sent == pytest.approx(attrs["grad"], abs=1e-12)
    assert G.graph["seeds"] == {G.graph["roots"][0]: 1.0}
    assert len(backward_steps(G)) == 5


def test_a_children_set_draws_the_same_on_every_run(tmp_path):
    outputs = set()
    for junk in ("0", "3", "1000"):
        done = subprocess.run([*CLI, "render", "shuffled.py", "-o", "-"], capture_output=True,
                              cwd=ENGINES, env={**os.environ, "JUNK": junk,
                                                "PYTHONHASHSEED": junk}, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.add(done.stdout)
    assert len(outputs) == 1


def test_micrograds_own_readme_example(tmp_path):
    values = by_label(graph_of(ENGINES / "micrograd_readme.py", tmp_path))
    # The numbers micrograd's README prints.
    assert f"{values['g']['data']:.4f}" == "24.7041"
    assert f"{values['a']['grad']:.4f}" == "138.8338"
    assert f"{values['b']['grad']:.4f}" == "645.5773"


def test_a_plus_a_kept_once_in_a_set_is_drawn_with_both_edges(tmp_path):
    G = graph_of(ENGINES / "twice.py", tmp_path)
    a = next(node for node, label in G.nodes(data="label") if label == "a")
    (add,) = G.successors(a)
    assert G.nodes[add]["op"] == "add" and G.nodes[add]["reconstructed"]
    # c = (a + a)²: dc/db = 2b = 12 comes back along both edges; dc/da = 24.
    assert sorted(grad for _, _, grad in G.out_edges(a, data="grad")) == [12.0, 12.0]
    assert G.nodes[a]["grad"] == 24.0
    assert any("a + a" in note for note in G.graph["notes"])
    assert "a + a" in draw(G).source


def test_a_non_commutative_op_gets_its_operands_in_the_order_the_data_says(tmp_path):
    G = graph_of(ENGINES / "difference.py", tmp_path)
    (sub,) = [node for node, op in G.nodes(data="op") if op == "sub"]
    first, second = (G.nodes[u]["label"] for u, _, _ in sorted(
        G.in_edges(sub, keys=True), key=lambda edge: G.edges[edge]["arg"]))
    assert (first, second) == ("a", "b")
    # L = (a - b)²: dL/da = 2(a - b) = 6, dL/db = -6.
    values = by_label(G)
    assert (values["a"]["grad"], values["b"]["grad"]) == (6.0, -6.0)


def test_backward_is_run_for_a_script_that_did_not(tmp_path):
    script = tmp_path / "forward.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ENGINES)!r})\n"
                      "from lecture import Value\n"
                      "a = Value(3.0, label='a')\nb = a * Value(4.0)\nc = b.tanh()\n")
    values = by_label(graph_of(script, tmp_path))
    assert values["a"]["grad"] == pytest.approx(4 * (1 - math.tanh(12.0) ** 2))


def test_draw_takes_another_engines_node_in_python():
    sys.path.insert(0, str(ENGINES))
    try:
        from lecture import Value as LectureValue
    finally:
        sys.path.remove(str(ENGINES))
    a = LectureValue(2.0, label="a")
    c = (a * 3).tanh()
    c.backward()
    G = draw(c, names={"c": c}).graph
    assert by_label(G)["a"]["grad"] == pytest.approx(3 * (1 - math.tanh(6.0) ** 2))
    assert by_label(G)["c"]["grad"] == 1.0
    # The script's objects are left as backward left them.
    assert a.grad == pytest.approx(3 * (1 - math.tanh(6.0) ** 2))


@pytest.mark.parametrize(("source", "message"), [
    ("class Node:\n    def __init__(self):\n        self._prev = set()\n        self._op = ''\n"
     "n = Node()\n", "a Node has _prev like a Value but no .data and no .grad"),
    # (a trial student's engine: .value and .gradient, parents in a tuple)
    ("class Scalar:\n    def __init__(self, value, parents=()):\n"
     "        self.value, self.gradient, self.parents = value, 0.0, parents\n"
     "s = Scalar(2.0, (Scalar(1.0),))\n",
     "a Scalar has parents like a Value but no .data and no .grad, so it is not drawn as a "
     "node (it keeps numbers in .value, .gradient): name its number data and its gradient "
     "grad, or give the class properties data and grad that return them"),
    ("import sys\nsys.path.insert(0, {engines!r})\nfrom lecture import Value\n"
     "a = Value(1.0)\nb = a * 2\nb._prev.add(b)\n", "lead back to it: a graph of values has no "
                                                    "cycles"),
    ("import sys\nsys.path.insert(0, {engines!r})\nfrom lecture import Value\n"
     "a = Value(1.0)\nb = a * 2\nb._prev.add(3.5)\n", "'s ._prev holds a float, not a node"),
])
def test_objects_that_look_like_nodes_but_are_not_get_one_sentence(tmp_path, source, message):
    script = tmp_path / "bad.py"
    script.write_text(source.format(engines=str(ENGINES)))
    done = render(script, "-o", str(tmp_path / "bad.svg"))
    assert done.returncode == 1
    assert message in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "bad.svg").exists()


def test_micrograd_nn_scripts_run_on_backpropviz_nn():
    micrograd_nn = pytest.importorskip("micrograd.nn")
    from backpropviz.nn import MLP

    def train_step(make_model, make_value):
        random.seed(1337)
        model = make_model(2, [16, 16, 1])
        xs = [[2.0, 3.0], [-1.0, 0.5], [0.3, -2.0]]
        ys = [1.0, -1.0, 1.0]
        scores = [model([make_value(x) for x in row]) for row in xs]
        losses = [(1 + -y * score).relu() for y, score in zip(ys, scores, strict=True)]
        total = sum(losses) * (1.0 / len(losses))
        loss = total + 1e-4 * sum(p * p for p in model.parameters())
        model.zero_grad()
        loss.backward()
        return loss.data, [p.grad for p in model.parameters()], [p.data for p in
                                                                 model.parameters()]

    from micrograd.engine import Value as MicrogradValue

    ours = train_step(MLP, Value)
    theirs = train_step(micrograd_nn.MLP, MicrogradValue)
    assert ours[2] == theirs[2]  # the same initialisation, number for number
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)
    assert ours[1] == pytest.approx(theirs[1], rel=1e-9, abs=1e-12)
    assert repr(MLP(2, [3, 1])) == repr(micrograd_nn.MLP(2, [3, 1]))


def test_a_script_using_backpropviz_nn_is_drawn_with_its_parameters(tmp_path):
    script = tmp_path / "mlp.py"
    script.write_text(textwrap.dedent("""
        import random
        from backpropviz.nn import MLP
        random.seed(0)
        model = MLP(2, [2, 1])
        out = model([1.0, -2.0])
        loss = (out - 1.0) ** 2
    """))
    G = graph_of(script, tmp_path)
    roles = [attrs["role"] for _, attrs in G.nodes(data=True) if attrs["kind"] == "value"]
    assert roles.count("param") == 9  # 2·2 + 2 weights and biases, then 2 + 1
    assert by_label(G)["loss"]["grad"] == 1.0


def test_foreign_graphs_are_read_without_names_too():
    sys.path.insert(0, str(ENGINES))
    try:
        from students import Correct
    finally:
        sys.path.remove(str(ENGINES))
    x = Correct(1.5)
    y = (x * x + x).tanh()
    y.backward()
    G = from_objects(y)
    validate(G)
    assert [G.nodes[v]["role"] for v in G.graph["roots"]] == ["output"]


def test_children_kept_in_a_tuple_keep_the_order_the_script_wrote(tmp_path):
    from backpropviz.names import value_names

    G = graph_of(ENGINES / "ordered.py", tmp_path)
    names = {value_names(G)[node].text for node, kind in G.nodes(data="kind") if kind == "value"}
    assert "c·a" in names and "a·c" not in names
    ops = [G.nodes[node]["op"] for node, kind in G.nodes(data="kind") if kind == "op"]
    assert ops == ["mul", "neg", "add", "tanh"]  # a one-child "-" is a negation


def test_micrograd_draws_the_same_on_every_run():
    outputs = {subprocess.run([*CLI, "render", "micrograd_readme.py", "-o", "-"],
                              capture_output=True, cwd=ENGINES, timeout=120).stdout
               for _ in range(3)}
    assert len(outputs) == 1


def test_gradients_left_by_two_backward_calls_are_drawn_and_explained(tmp_path):
    out = tmp_path / "twice.svg"
    done = render(ENGINES / "twice_backward.py", "-o", str(out))
    assert done.returncode == 0, done.stderr
    svg = out.read_text()
    assert svg.count('fill="#1347b8"') >= 5  # every value's gradient, in blue
    assert "backward() ran 2 times" in svg


def test_a_script_whose_work_is_inside_main_is_told_how_to_fix_it(tmp_path):
    script = tmp_path / "in_main.py"
    script.write_text("from backpropviz import Value\n\ndef main():\n    a = Value(2.0)\n"
                      "    return (a * a).tanh()\n\nif __name__ == '__main__':\n    main()\n")
    done = render(script, "-o", str(tmp_path / "x.svg"))
    assert done.returncode == 1
    assert done.stderr.strip().endswith("return the result and keep it in a global name, "
                                        "e.g. L = main()")


@pytest.mark.parametrize(("engine", "script", "running", "lines"), [
    # = for +=: h · h sets h's gradient to −2.5 twice; it never held −1.25 (half the
    # change seen around the whole call, which the captions had said it "gave").
    ("Overwrites", "h = x * w + b\ny = h * h + x", [-2.5, -2.5],
     ["∂y/∂h = h · ∂y/∂(h·h) = (−2.5) · 1 = −2.5",
      "∂y/∂h = h · ∂y/∂(h·h) = (−2.5) · 1 = −2.5 (overwrote −2.5 — gradients at a fork "
      "must add: +=)"]),
    ("Correct", "h = x * w + b\ny = h * h + x", [-2.5, -5.0],
     ["∂y/∂h = h · ∂y/∂(h·h) = (−2.5) · 1 = −2.5", "∂y/∂h += h · ∂y/∂(h·h) = (−2.5) · 1 = −2.5",
      "∂y/∂h = −2.5 + (−2.5) = −5"]),
    # h − h sends +1 and −1: the gradient is back where it was, and no share is 0 (a
    # set's one child of "-" had been read as −h, drawn as 0 where h is −2.5).
    ("Subtracts", "h = x * w + b\ny = (h - h) + h", [2.0, 1.0],
     ["∂y/∂h = ∂y/∂y = 1", "∂y/∂h += ∂y/∂(h − h) = 1", "∂y/∂h = 1 + 1 = 2",
      "∂y/∂h += −∂y/∂(h − h) = −1", "∂y/∂h = 2 + (−1) = 1"]),
])
def test_a_value_used_twice_by_one_op_gets_the_shares_its_engine_held_in_turn(
        tmp_path, engine, script, running, lines):
    """A children set keeps h once for h · h, and the engine is seen only before and after
    the op's whole backward: each edge carries the share the rule sends it, added (+=) or
    set (=) in turn as the engine's own sum shows, and every caption says what it held."""
    from backpropviz.captions import step_captions

    path = tmp_path / "twice_by_one_op.py"
    path.write_text(f"import sys\nsys.path.insert(0, {str(ENGINES)!r})\nimport students\n"
                    f"Value = students.{engine}\nx = Value(2.0, label='x')\n"
                    f"w = Value(-1.5, label='w')\nb = Value(0.5, label='b')\n{script}\n"
                    "y.label = 'y'\ny.backward()\n")
    G = graph_of(path, tmp_path)
    (op,) = [op for op in G if G.in_degree(op) == 2 and len(set(G.predecessors(op))) == 1]
    edges = sorted(G.in_edges(op, keys=True, data=True), key=lambda edge: edge[3]["arg"])
    assert [attrs["running"] for *_, attrs in edges] == pytest.approx(running)
    assert G.nodes[op]["op"] == ("sub" if engine == "Subtracts" else "mul")
    said = [line for caption in step_captions(G) for line in caption.worked
            if line.startswith("∂y/∂h ")]
    assert said[:len(lines)] == lines
    assert not any("half" in note for note in G.graph["notes"])
    # (its note names the op as the script wrote it, not an example of another)
    symbol = "−" if engine == "Subtracts" else "×"
    assert any(note.startswith(f"a value used twice by one op (h {symbol} h) is kept once")
               for note in G.graph["notes"])


def test_a_note_names_every_op_that_used_a_value_twice(tmp_path):
    path = tmp_path / "two_twice.py"
    path.write_text(f"import sys\nsys.path.insert(0, {str(ENGINES)!r})\n"
                    "from students import Correct as Value\nx = Value(2.0, label='x')\n"
                    "h = x * x\nh.label = 'h'\nd = h + h\nd.label = 'd'\nd.backward()\n")
    G = graph_of(path, tmp_path)
    assert any(note.startswith("a value used twice by one op (x × x, h + h) is kept once")
               for note in G.graph["notes"]), G.graph["notes"]
