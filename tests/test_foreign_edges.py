"""Other engines at the edges: updates after backward, numbers an operator wraps, chain
rules under other names, and a set-based engine graded the same on every run.

The scripts are in tests/engines/, written as lecturers and students write them; each
number is compared with one computed here by hand, by plain micrograd, or by finite
differences, never with the tool's own output.
"""

from __future__ import annotations

import math
import random
import sys
import textwrap
from pathlib import Path

import pytest

from backpropviz import cli, foreign, foreign_nodes
from backpropviz.check import check_graph, check_script
from backpropviz.ir import validate
from backpropviz.script import graph_of_script, running

ENGINES = Path(__file__).resolve().parent / "engines"
sys.path.insert(0, str(ENGINES))

import named_closures  # noqa: E402  (tests/engines, a student's module)
import students  # noqa: E402


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(f"import sys\nsys.path.insert(0, {str(ENGINES)!r})\n"
                    + textwrap.dedent(source))
    return path


def values(G) -> dict:
    """Value nodes by the name drawn (a label, else the script's name)."""
    return {attrs["label"]: attrs for _, attrs in G.nodes(data=True)
            if attrs["kind"] == "value" and attrs["label"]}


def sent(G, node) -> list[float]:
    """What came back along each edge out of ``node``, in edge order."""
    return sorted(grad for _, _, grad in G.out_edges(node, data="grad"))


def node_of(G, label: str):
    return next(node for node, name in G.nodes(data="label") if name == label)


def test_micrograd_after_an_update_draws_the_numbers_the_forward_pass_used(tmp_path):
    path = write(tmp_path, "update.py", """\
        from micrograd.engine import Value
        w = Value(2.0)
        x = Value(3.0)
        y = w * x
        L = y - 1.0
        L.backward()
        w.data -= 0.1 * w.grad
        """)
    G = graph_of_script(path, fold=False)
    validate(G)
    drawn = values(G)
    # y = w·x = 6 with w = 2 (as used); L = y − 1 = 5; dL/dw = x = 3, dL/dx = w = 2.
    assert (drawn["w"]["data"], drawn["x"]["data"], drawn["y"]["data"]) == (2.0, 3.0, 6.0)
    assert drawn["L"]["data"] == 5.0
    assert (drawn["w"]["grad"], drawn["x"]["grad"]) == (3.0, 2.0)
    # The shares are on the edges (what the update used: 0.1 · 3 = 0.3 off w).
    assert sent(G, node_of(G, "w")) == [3.0] and sent(G, node_of(G, "x")) == [2.0]
    assert G.graph["backward_order"] and G.graph["seeds"]
    assert "w = 2 → 1.7 after the update (drawn as the forward pass used it)" in G.graph["notes"]
    assert not any("not drawn" in note for note in G.graph["notes"])
    # From y, the picture is y's part of that run: w as used, the update noted.
    H = graph_of_script(path, ["y"])
    assert values(H)["w"]["data"] == 2.0 and values(H)["y"]["data"] == 6.0
    assert "w = 2 → 1.7 after the update (drawn as the forward pass used it)" in H.graph["notes"]
    # The script's objects are as its engine made them: sets and closures put back.
    with running(path) as run:
        L, w = run.names["L"], run.names["w"]
        assert type(L._prev) is set and type(w._prev) is set
        assert L._backward.__qualname__ == "Value.__add__.<locals>._backward"


def test_a_training_loop_draws_its_last_pass_as_it_ran():
    G = graph_of_script(ENGINES / "micrograd_loop.py", fold=False)
    validate(G)
    # The same twenty steps by hand: loss = (3w + b − 2)², dloss/dw = 6r, dloss/db = 2r.
    w, b = 0.5, 0.0
    for _ in range(20):
        r = 3 * w + b - 2
        dw, db = 6 * r, 2 * r
        last = (w, b, dw, db, r * r)
        w, b = w - 0.01 * dw, b - 0.01 * db
    drawn = values(G)
    assert drawn["w"]["data"] == pytest.approx(last[0], rel=1e-12)
    assert drawn["b"]["data"] == pytest.approx(last[1], rel=1e-12)
    assert drawn["w"]["grad"] == pytest.approx(last[2], rel=1e-9)
    assert drawn["b"]["grad"] == pytest.approx(last[3], rel=1e-9)
    assert drawn["loss"]["data"] == pytest.approx(last[4], rel=1e-9)
    notes = G.graph["notes"]
    assert any(note.startswith("w = ") and "after the update" in note for note in notes)
    # The constants 3 and −2 are drawn as constants: no gradient shown, no input box.
    constants = sorted(attrs["data"] for _, attrs in G.nodes(data=True)
                       if attrs.get("role") == "const")
    assert constants == [-2.0, 3.0]


def test_micrograds_mlp_after_training_shows_the_last_steps_parameters_and_gradients():
    G = graph_of_script(ENGINES / "micrograd_mlp.py")
    validate(G)
    # Plain micrograd, the same steps, stopped before the last update.
    from micrograd.nn import MLP
    random.seed(1)
    model = MLP(2, [3, 1])
    xs, ys = [[2.0, 3.0], [3.0, -1.0], [0.5, 1.0]], [1.0, -1.0, 1.0]
    for k in range(5):
        loss = sum((model(x) - y) ** 2 for x, y in zip(xs, ys, strict=True))
        model.zero_grad()
        loss.backward()
        if k < 4:
            for p in model.parameters():
                p.data -= 0.05 * p.grad
    expected = sorted((p.data, p.grad) for p in model.parameters())
    params = sorted((attrs["data"], attrs["grad"]) for _, attrs in G.nodes(data=True)
                    if attrs.get("role") == "param")
    assert len(params) == len(expected) == 13
    for (data, grad), (data_then, grad_then) in zip(params, expected, strict=True):
        assert data == pytest.approx(data_then, rel=1e-12)
        assert grad == pytest.approx(grad_then, rel=1e-9, abs=1e-15)
    root = G.graph["roots"][0]
    assert G.nodes[root]["data"] == pytest.approx(loss.data, rel=1e-12)
    assert any(note.startswith(f"{len(expected)} values changed after the update")
               for note in G.graph["notes"])


def test_numbers_an_operator_wraps_are_constants_and_named_values_are_inputs(tmp_path):
    path = write(tmp_path, "constants.py", """\
        from micrograd.engine import Value
        x = Value(3.0)
        c = Value(4.0)
        y = 2 * x + 1
        L = (y - 1.0) * c
        """)
    G = graph_of_script(path, fold=False)
    validate(G)
    roles = {attrs["label"] or attrs["data"]: attrs["role"] for _, attrs in G.nodes(data=True)
             if attrs["kind"] == "value" and not G.in_degree(_)}
    # micrograd wraps 2, 1 and −1 (y − 1.0 is y + (−1.0)) in Values of its own.
    assert roles == {"x": "input", "c": "input", 2.0: "const", 1.0: "const", -1.0: "const"}
    drawn = values(G)
    # L = (2x + 1 − 1)·c: dL/dx = 2c = 8, dL/dc = 2x = 6 (backward run for the drawing).
    assert (drawn["x"]["grad"], drawn["c"]["grad"]) == (8.0, 6.0)


def finite_difference(f, point: list[float], i: int, h: float = 1e-6) -> float:
    up, down = list(point), list(point)
    up[i] += h
    down[i] -= h
    return (f(*up) - f(*down)) / (2 * h)


@pytest.mark.parametrize(("engine", "form"), [
    ("Fn", lambda a, b: math.tanh(a * b) + a),
    ("Slotted", lambda a, b: a * b - a * a),
])
def test_a_chain_rule_under_another_name_is_watched(engine, form):
    Value = getattr(named_closures, engine)
    a, b = Value(1.5), Value(-2.0)
    h = a * b
    L = h.tanh() + a if engine == "Fn" else h - a * a
    L.backward()
    G = foreign.from_objects(L, names={"a": a, "b": b, "h": h, "L": L})
    validate(G)
    drawn = values(G)
    for i, name in enumerate("ab"):
        assert drawn[name]["grad"] == pytest.approx(
            finite_difference(form, [1.5, -2.0], i), rel=1e-6)
    # Every edge carries its share: a's edges sum to a's gradient.
    shares = sent(G, node_of(G, "a"))
    assert None not in shares and sum(shares) == pytest.approx(drawn["a"]["grad"])
    if engine == "Fn":  # L = tanh(ab) + a: a sends (1 − tanh²)·b back, and 1
        assert shares == pytest.approx(sorted([1.0, (1 - math.tanh(-3.0) ** 2) * -2.0]))
    else:  # L = ab − a²: a sends b = −2 back through ab, and −a and −a through a·a
        assert shares == pytest.approx([-2.0, -1.5, -1.5])
    assert len(G.graph["backward_order"]) == sum(1 for _, kind in G.nodes(data="kind")
                                                 if kind == "op")


def test_an_engine_without_a_chain_rule_to_watch_says_so_and_its_clip_is_refused(tmp_path,
                                                                                  capsys):
    path = ENGINES / "no_rule.py"
    G = graph_of_script(path)
    validate(G)
    drawn = values(G)
    assert (drawn["a"]["grad"], drawn["b"]["grad"]) == (-1.0, 1.5)  # b + 1, a
    assert any(note.startswith("Inline's results keep no chain rule") for note in
               G.graph["notes"])
    out = tmp_path / "inline.mp4"
    assert cli.main(["render", str(path), "-o", str(out), "--quality", "l"]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("backpropviz: error: cannot animate the backward pass: "
                          "Inline's results keep no chain rule")
    assert "out._backward = _backward" in err and "phase=" not in err


OVERWRITE_CAUSE = "write += in every _backward (gradients accumulate at forks)"


def test_check_names_the_overwrite_in_a_set_engine_on_every_run(monkeypatch, capsys):
    # In this process: ids, and with them the children sets' order, move with $JUNK.
    monkeypatch.chdir(ENGINES)
    for junk in range(12):
        monkeypatch.setenv("JUNK", str(junk * 37))
        report = check_script(ENGINES / "overwritten_fork.py")
        got = {wrong.name: (wrong.got, wrong.expected) for wrong in report.wrong}
        # x feeds x·w1 and x·w2: dL/dx = w1 + w2 = 0.5; = keeps one share, w1 or w2.
        assert set(got) == {"x"} and got["x"][1] == 0.5 and got["x"][0] in (-1.5, 2.0)
        assert OVERWRITE_CAUSE in report.text()


class _Ordered(set):
    """A set iterating in the order given: a children set as some run of Python orders it."""

    def __init__(self, items):
        super().__init__(items)
        self.order = list(items)

    def __iter__(self):
        return iter(self.order)


@pytest.mark.parametrize("first", ["x·w1", "x·w2"])
def test_a_set_engine_read_from_python_is_graded_on_the_order_its_backward_ran(first):
    # Without the script's run watched (the Python API), backward() is run again:
    # in the order the script's own run had when the graph order gives other numbers.
    x = students.Overwrites(0.5, label="x")
    w1, w2 = students.Overwrites(-1.5, label="w1"), students.Overwrites(2.0, label="w2")
    products = {"x·w1": x * w1, "x·w2": x * w2}
    L = products["x·w1"] + products["x·w2"]
    L._prev = _Ordered([products[first], products[({*products} - {first}).pop()]])
    L.backward()
    kept = x.grad  # the share of the product whose _backward ran last
    graph = foreign.read_graph(L, names={"x": x, "w1": w1, "w2": w2, "L": L})
    assert graph.inconsistency is None and x.grad == kept
    report = check_graph(graph)
    assert [(wrong.name, wrong.got, wrong.expected) for wrong in report.wrong] == \
        [("x", kept, 0.5)]
    assert OVERWRITE_CAUSE in report.text()


def test_check_still_refuses_an_update_after_backward(tmp_path, capsys):
    code = cli.main(["check", str(ENGINES / "after_update.py")])
    assert code == 2
    err = capsys.readouterr().err
    assert "values changed after backward(), e.g. an update" in err


def test_a_run_too_big_to_watch_is_read_again_and_an_update_is_not_hidden(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr(foreign_nodes, "WATCHED_NODES", 2)  # the script's run: not watched
    path = write(tmp_path, "update.py", """\
        from micrograd.engine import Value
        w = Value(2.0)
        x = Value(3.0)
        L = w * x
        L.backward()
        w.data -= 0.1 * w.grad
        """)
    G = graph_of_script(path)
    drawn = values(G)
    # Read again from w = 1.7, backward gives dL/dx = 1.7, not the 2 the script's run
    # left: the gradients drawn are the script's, and the note says why no share is.
    assert (drawn["w"]["grad"], drawn["x"]["grad"]) == (3.0, 2.0)
    assert [grad for _, _, grad in G.out_edges(node_of(G, "w"), data="grad")] == [None]
    assert any("values changed after backward()" in note and "not drawn" in note
               for note in G.graph["notes"])


def test_an_engine_that_overwrites_is_drawn_with_the_shares_it_sent():
    """A student's engine with = for +=: at the fork, x first gets h's share, then w's
    share replaces it. Each edge carries the share the engine sent (the rule's: weight ·
    upstream), the number its gradient was set to, not what the gradient changed by
    (0.3105 had been drawn on the neuron's edge, "its share of a fork's sum", a number
    the engine never held)."""
    x, w, b = students.Overwrites(0.8), students.Overwrites(-1.2), students.Overwrites(0.3)
    h = x * w + b
    loss = (h * x).tanh()
    loss.backward()
    G = foreign.from_objects(loss, names={"x": x, "w": w, "b": b, "h": h, "loss": loss})
    validate(G)
    (x_id,) = [node for node, label in G.nodes(data="label") if label == "x"]
    upstream = 1 - math.tanh(h.data * x.data) ** 2
    dh = upstream * x.data  # h's gradient, then the share h·x's op and x·w's op send x:
    sent = {"h": upstream * h.data, "w": dh * w.data}
    shares = {}
    for _, op, _key, data in G.out_edges(x_id, keys=True, data=True):
        other = [G.nodes[u]["label"] for u, _, _ in G.in_edges(op, keys=True) if u != x_id]
        shares[other[0]] = (data["grad"], data["running"])
    assert shares.keys() == sent.keys()
    for name, (share, after) in shares.items():
        assert math.isclose(share, sent[name], rel_tol=1e-12) and share == after
    assert math.isclose(x.grad, sent["w"], rel_tol=1e-12)  # (the last share, all it kept)
