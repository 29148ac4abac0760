"""Training loops recorded pass by pass (render --iterations), each against the same loop
run as python runs it, without backpropviz: every iteration's loss, every parameter's value
before and after the update and its gradient, equal to the bit."""

from __future__ import annotations

import json
import math
import re
import textwrap
from pathlib import Path

import pytest

from backpropviz.cli import main
from backpropviz.errors import BackpropvizError, UsageError
from backpropviz.formatting import changed_note
from backpropviz.options import Options
from backpropviz.train_record import graph_to_draw, learning_rate, record_training
from backpropviz.training_json import from_json, to_json

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# A Value class as a lecture writes it (children in a set, a recursive topological
# sort), and micrograd's demo loop on three points with a neuron of its own.
LECTURE = '''
import math


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def __pow__(self, k):
        out = Value(self.data ** k, (self,), f"**{k}")

        def _backward():
            self.grad += k * self.data ** (k - 1) * out.grad
        out._backward = _backward
        return out

    def __sub__(self, other):
        return self + other * -1

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t ** 2) * out.grad
        out._backward = _backward
        return out

    def backward(self):
        topo, visited = [], set()

        def build(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build(child)
                topo.append(v)
        build(self)
        self.grad = 1.0
        for node in reversed(topo):
            node._backward()


class Neuron:
    def __init__(self):
        self.w = [Value(0.3), Value(-0.5)]
        self.b = Value(0.1)

    def __call__(self, x):
        return sum((wi * xi for wi, xi in zip(self.w, x)), self.b).tanh()

    def parameters(self):
        return self.w + [self.b]


n = Neuron()
xs = [[2.0, 3.0], [3.0, -1.0], [0.5, 1.0]]
ys = [1.0, -1.0, -1.0]
for k in range(4):
    ypred = [n(x) for x in xs]
    loss = sum((yout - ygt) ** 2 for ygt, yout in zip(ys, ypred))
    for p in n.parameters():
        p.grad = 0.0
    loss.backward()
    for p in n.parameters():
        p.data += -0.05 * p.grad
'''

MICROGRAD = '''
import random

from micrograd.nn import MLP

random.seed(1)
model = MLP(2, [3, 1])
xs = [[1.0, -1.0], [0.5, 2.0]]
ys = [1.0, -1.0]
for k in range(3):
    scores = [model(x) for x in xs]
    loss = sum((s - y) ** 2 for s, y in zip(scores, ys))
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data -= 0.1 * p.grad
'''

TORCH_SGD = '''
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
X = torch.tensor([[1.0, 2.0], [0.5, -1.0], [-1.0, 0.0]])
y = torch.tensor([[1.0], [0.0], [0.5]])
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(4):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(X), y)
    loss.backward()
    optimizer.step()
'''

TORCH_ADAM = TORCH_SGD.replace("SGD(model.parameters(), lr=0.05)",
                               "Adam(model.parameters(), lr=0.01)")

# Updates by hand: .data -= for one, a torch.no_grad() block for the other, in main().
TORCH_BY_HAND = '''
import torch


def main():
    w = torch.tensor([0.5, -0.3], requires_grad=True)
    b = torch.tensor(0.1, requires_grad=True)
    X = torch.tensor([[1.0, 2.0], [3.0, 1.0]])
    y = torch.tensor([1.0, 2.0])
    lr = 0.1
    for step in range(3):
        loss = ((X @ w + b - y) ** 2).mean()
        loss.backward()
        w.data -= lr * w.grad
        with torch.no_grad():
            b -= lr * b.grad
        w.grad.zero_()
        b.grad = None


if __name__ == "__main__":
    main()
'''

ENGINE_IN_MAIN = '''
from backpropviz import Value


def main():
    w = Value(2.0, requires_grad=True)
    b = Value(0.5, requires_grad=True)
    lr = 0.01
    for step in range(4):
        loss = sum(((w * x + b) - y) ** 2 for x, y in [(1.0, 1.0), (2.0, 3.0), (3.0, 5.0)])
        w.grad = 0.0
        b.grad = 0.0
        loss.backward()
        w.data -= lr * w.grad
        b.data -= lr * b.grad


main()
'''


def _torch_numbers(p):
    return p.detach().tolist(), None if p.grad is None else p.grad.tolist()


def _value_numbers(p):
    return p.data, p.grad


def _tensor_numbers(p):
    return p.data.tolist(), None if p.grad is None else p.grad.tolist()


# Each loop: its source, what the reference run reads after each backward() (the
# parameters by the names the run gives them), and how it reads a parameter's value
# and gradient. Engines whose children are a set are compared as _same_moves says.
SETS = ("lecture_value_class", "micrograd")
LOOPS = {
    "lecture_value_class": (LECTURE, "{f'n.parameters()[{i}]': p for i, p in "
                                     "enumerate(n.parameters())}", _value_numbers),
    "micrograd": (MICROGRAD, "{f'model.parameters()[{i}]': p for i, p in "
                             "enumerate(model.parameters())}", _value_numbers),
    "torch_sgd": (TORCH_SGD, "{'model.' + n: p for n, p in model.named_parameters()}",
                  _torch_numbers),
    "torch_adam": (TORCH_ADAM, "{'model.' + n: p for n, p in model.named_parameters()}",
                   _torch_numbers),
    "torch_by_hand_in_main": (TORCH_BY_HAND, "{'w': w, 'b': b}", _torch_numbers),
    "engine_in_main": (ENGINE_IN_MAIN, "{'w': w, 'b': b}", _value_numbers),
    "engine_book_mlp": ((EXAMPLES / "training_loop.py").read_text(), "{'W1': W1, 'W2': W2}",
                        _tensor_numbers),
}


def _reference(source: str, probe: str, numbers) -> list:
    """The loop run as python runs it (no backpropviz recording): after each backward(),
    the loss and each parameter's (value, gradient); then each pass's value after its
    update: the next pass's value, or for the last the value when the loop ended."""
    seen: list = []

    def snap(loss, parameters) -> None:
        loss = float(loss.item() if hasattr(loss, "item") else loss.data)
        seen.append((loss, parameters, {key: numbers(p) for key, p in _keyed(parameters)}))

    calls = re.findall(r"(\w+)\.backward\(\)", source)
    assert len(calls) == 1  # the loop's one backward() call, read right after it
    marked = source.replace(f"{calls[0]}.backward()",
                            f"{calls[0]}.backward(); _snap({calls[0]}, {probe})")
    exec(compile(marked, "<reference>", "exec"), {"_snap": snap, "__name__": "__main__"})
    passes = []
    for i, (loss, parameters, now) in enumerate(seen):
        later = seen[i + 1][2] if i + 1 < len(seen) else {
            key: numbers(p)[0] for key, p in _keyed(parameters)}
        after = {key: value[0] if isinstance(value, tuple) else value
                 for key, value in later.items()}
        passes.append((loss, {key: (value, grad, after[key]) for key, (value, grad)
                              in now.items()}))
    return passes


def _keyed(parameters):
    """A probe's parameters as (key, parameter): by name, or by place in a list."""
    return parameters.items() if isinstance(parameters, dict) else enumerate(parameters)


def _script(tmp_path: Path, source: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def _same_moves(recorded: dict, expected) -> None:
    """The updates of an engine whose children are a set (the lecture's, micrograd's).

    Its backward adds a value's contributions in the order its sets iterate, which
    follows id() in a plain run, so two plain runs differ in the last bits; while the
    recording watches a backward() the sets iterate in one order read from the graph.
    So the numbers agree with the plain run's to rounding, and to the bit with the
    update the script wrote (p.data += -lr * p.grad, p.data -= lr * p.grad)."""
    assert list(recorded) == list(expected)  # by place in the model's parameters()
    for name, update in recorded.items():
        assert (update.before, update.grad, update.after) == pytest.approx(
            expected[name], rel=1e-12, abs=1e-15)
    rates = {u.rate for u in recorded.values()}
    assert len(rates) == 1
    rate = rates.pop()
    assert all(u.after in (u.before + -rate * u.grad, u.before - rate * u.grad)
               for u in recorded.values())


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_every_iteration_is_the_loop_as_python_ran_it(loop, tmp_path):
    source, probe, numbers = LOOPS[loop]
    if "torch" in source:
        pytest.importorskip("torch")
    reference = _reference(source, probe, numbers)
    run = record_training(_script(tmp_path, source), Options(iterations=10), quiet=True)
    assert run.total == len(reference) and run.every == 1
    assert [iteration.index for iteration in run.iterations] == list(range(len(reference)))
    for iteration, (loss, parameters) in zip(run.iterations, reference, strict=True):
        if loop in SETS:
            assert iteration.loss == pytest.approx(loss, rel=1e-12)
            _same_moves(iteration.parameters, parameters)
            continue
        assert iteration.loss == loss
        assert list(iteration.parameters) == list(parameters)  # in the model's order
        assert {name: (u.before, u.grad, u.after)
                for name, u in iteration.parameters.items()} == parameters


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_every_pass_shares_the_first_passs_drawing(loop, tmp_path):
    # The clip and the page show every pass in one drawing: the same ids for the same
    # values and ops. An optimizer's step changes its parameters in place (under
    # no_grad), which must not move them in the order the ids follow; nor must the
    # numbers an update changes, in an engine whose children are a set (its order is
    # read from the graph), nor the loop variable left on a parameter (for p in ...).
    source = LOOPS[loop][0]
    if "torch" in source:
        pytest.importorskip("torch")
    run = record_training(_script(tmp_path, source), Options(iterations=10), quiet=True)

    def drawing(G):
        return ({node: (attrs.get("label"), attrs.get("op"), str(attrs.get("shape")))
                 for node, attrs in G.nodes(data=True)}, sorted(map(str, G.edges(keys=True))))

    first = drawing(run.iterations[0].graph)
    assert len(run.iterations) > 1
    assert all(drawing(it.graph) == first for it in run.iterations[1:])


def test_plain_gradient_descent_gives_its_learning_rate_and_adam_none(tmp_path):
    pytest.importorskip("torch")
    rates = {}
    for name, source in (("sgd", TORCH_SGD), ("adam", TORCH_ADAM), ("book", LOOPS[
            "engine_book_mlp"][0]), ("lecture", LECTURE)):
        run = record_training(_script(tmp_path, source, f"{name}.py"), quiet=True)
        rates[name] = {u.rate for it in run.iterations for u in it.parameters.values()}
    assert rates == {"sgd": {0.05}, "adam": {None}, "book": {0.1}, "lecture": {0.05}}


def test_the_learning_rate_is_read_off_only_where_one_rate_gives_every_number():
    lr = 0.01
    moves = [(2.0, 0.3, 2.0 - lr * 0.3), ([1.0, -1.0], [0.5, 0.0], [1.0 - lr * 0.5, -1.0])]
    assert learning_rate(moves) == 0.01
    assert learning_rate([(2.0, 0.3, 2.0 - 0.01 * 0.3), (1.0, 0.5, 1.0 - 0.02 * 0.5)]) is None
    assert learning_rate([(1.0, 0.0, 0.9)]) is None  # moved without a gradient: decay
    assert learning_rate([(1.0, 0.0, 1.0)]) is None  # nothing moved: nothing to read


def test_every_keeps_passes_0_k_2k_each_with_the_update_right_after_it(tmp_path):
    source = ENGINE_IN_MAIN.replace("range(4)", "range(7)")
    reference = _reference(source, "{'w': w, 'b': b}", _value_numbers)
    run = record_training(_script(tmp_path, source), Options(iterations=3, every=3),
                          quiet=True)
    assert [iteration.index for iteration in run.iterations] == [0, 3, 6]
    assert run.every == 3 and run.total == 7
    for iteration in run.iterations:
        loss, parameters = reference[iteration.index]
        assert iteration.loss == loss
        assert {name: (u.before, u.grad, u.after)
                for name, u in iteration.parameters.items()} == parameters
    two = record_training(_script(tmp_path, source), Options(iterations=2, every=2), quiet=True)
    assert [iteration.index for iteration in two.iterations] == [0, 2]
    assert any("kept 2 of the script's 7 backward passes" in note for note in two.notes)


def test_a_loop_whose_graph_grows_is_recorded_pass_by_pass_and_says_so(tmp_path):
    source = '''
        from backpropviz import Value

        w = Value(1.0, requires_grad=True)
        for step in range(3):
            loss = sum((w * t - 1.0) ** 2 for t in range(step + 1))
            w.grad = 0.0
            loss.backward()
            w.data -= 0.1 * w.grad
    '''
    run = record_training(_script(tmp_path, source), quiet=True)
    sizes = [iteration.graph.number_of_nodes() for iteration in run.iterations]
    assert sizes[0] < sizes[1] < sizes[2]
    assert any("graph changes from iteration to iteration" in note for note in run.notes)
    fixed = record_training(EXAMPLES / "training_loop.py", quiet=True)
    assert not any("graph changes" in note for note in fixed.notes)


def test_iteration_k_is_drawn_as_the_pass_the_loop_ran(tmp_path):
    source, probe, numbers = LOOPS["engine_book_mlp"]
    loss, parameters = _reference(source, probe, numbers)[2]
    G = graph_to_draw(EXAMPLES / "training_loop.py", (), Options(iteration=2), quiet=True)
    by_label = {attrs.get("label"): attrs for _, attrs in G.nodes(data=True)}
    assert by_label["L"]["data"] == loss
    for name in ("W1", "W2"):
        assert (by_label[name]["data"], by_label[name]["grad"]) == parameters[name][:2]
    out = tmp_path / "pass2.svg"
    assert main(["render", str(EXAMPLES / "training_loop.py"), "--iteration", "2",
                 "-o", str(out)]) == 0
    assert out.read_text().lstrip().startswith(("<?xml", "<svg"))


def test_iteration_k_says_what_the_update_after_it_did(tmp_path):
    # As a single pass's picture says it: w = before → after, the numbers the loop
    # itself held around pass 2's update (a plain run of the same arithmetic).
    source = '''
        from backpropviz import Value

        w = Value(2.0, requires_grad=True)
        for step in range(4):
            loss = (w * 3.0 - 1.0) ** 2
            w.grad = 0.0
            loss.backward()
            w.data -= 0.01 * w.grad
    '''
    w = 2.0
    for _pass in range(3):  # passes 0, 1, 2: pass 2 used w before, left w
        before, w = w, w - 0.01 * (2 * (w * 3.0 - 1.0) * 3.0)
    G = graph_to_draw(_script(tmp_path, source), (), Options(iteration=2), quiet=True)
    assert changed_note("w", before, w) in G.graph["notes"]
    assert f"{before:.4g} → {w:.4g}" in changed_note("w", before, w)


def test_the_json_through_the_command_line(tmp_path, capsys):
    source, probe, numbers = LOOPS["engine_book_mlp"]
    reference = _reference(source, probe, numbers)
    out = tmp_path / "train.json"
    assert main(["render", str(EXAMPLES / "training_loop.py"), "--iterations", "3",
                 "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["every"] == 1 and data["total"] == 5 and len(data["iterations"]) == 3
    for item, (loss, parameters) in zip(data["iterations"], reference, strict=False):
        assert item["loss"] == loss
        assert {name: (u["before"], u["grad"], u["after"])
                for name, u in item["parameters"].items()} == parameters
        assert {u["rate"] for u in item["parameters"].values()} == {0.1}
        labels = {node.get("label"): node for node in item["graph"]["nodes"]}
        assert labels["W1"]["data"] == parameters["W1"][0]
    run = from_json(out.read_text())  # and back, whole
    assert from_json(to_json(run)).iterations[2].parameters == run.iterations[2].parameters
    assert [it.loss for it in run.iterations] == [loss for loss, _ in reference[:3]]


def test_a_non_finite_loss_is_strict_json_and_comes_back(tmp_path):
    source = '''
        from backpropviz import Value

        w = Value(10.0, requires_grad=True)
        for step in range(3):
            loss = (w * w).exp()
            w.grad = 0.0
            loss.backward()
            w.data -= 1.0 * w.grad
    '''
    run = record_training(_script(tmp_path, source), quiet=True)
    text = to_json(run)
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in strict JSON"))
    back = from_json(text)
    assert math.isinf(back.iterations[1].loss) or math.isnan(back.iterations[1].loss)


REFUSALS = {
    "one_pass": ([str(EXAMPLES / "d2l_mlp.py"), "--iterations"], "ran backward() once"),
    "no_backward": (["nothing.py", "--iterations"], "never called backward()"),
    "too_big": (["big.py", "--iterations", "50"], "--every K"),
    "too_big_torch": (["big_torch.py", "--iterations"], "--every K"),
    "too_big_value_class": (["big_lecture.py", "--iterations"], "--every K"),
    "steps": (["loop.py", "--iterations", "--steps", "steps"], "--iteration K"),
    "iteration_past_the_end": (["loop.py", "--iteration", "9"], "ran 4 backward passes"),
    "a_root": (["loop.py", "loss", "--iterations"], "leave out ROOT"),
    "no_backward_option": (["loop.py", "--iterations", "--no-backward"], "--no-backward"),
    "a_dot_file": (["loop.py", "--iterations", "-o", "run.dot"], "not .dot"),
    "practice": (["loop.py", "--iterations", "--practice", "-o", "run.html"], "--iteration K"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusals_are_one_line_a_failing_status_and_no_file(case, tmp_path, capsys,
                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    _script(tmp_path, ENGINE_IN_MAIN, "loop.py")
    _script(tmp_path, "from backpropviz import Value\nL = Value(2.0) * Value(3.0)\n",
            "nothing.py")
    _script(tmp_path, '''
        from backpropviz import Value

        ws = [Value(0.1 * i, requires_grad=True) for i in range(30)]
        for step in range(1000):
            print("step", step)
            loss = sum(w * w for w in ws)
            loss.backward()
            for w in ws:
                w.data -= 0.01 * w.grad
                w.grad = 0.0
    ''', "big.py")
    if case == "too_big_torch":
        pytest.importorskip("torch")
    _script(tmp_path, '''
        import torch

        w = torch.ones(3, requires_grad=True)
        for step in range(100):
            print("step", step)
            h = w
            for _ in range(300):
                h = h * 1.0001
            loss = h.sum()
            loss.backward()
            with torch.no_grad():
                w -= 0.01 * w.grad
            w.grad = None
    ''', "big_torch.py")
    _script(tmp_path, LECTURE.replace("range(4)", "range(100)").replace(
        "[n(x) for x in xs]", "[n(x) for x in xs * 10]").replace(
        "zip(ys, ypred)", "zip(ys * 10, ypred)").replace(
        "    loss.backward()", '    print("step", k)\n    loss.backward()'), "big_lecture.py")
    argv, said = REFUSALS[case]
    if "-o" not in argv:
        argv = [*argv, "-o", "run.json"]
    status = main(["render", *argv])
    err = capsys.readouterr()
    lines = err.err.strip().splitlines()
    assert status != 0
    assert len(lines) == 1 and lines[0].startswith("backpropviz: error: ") and said in lines[0]
    assert not list(tmp_path.glob("run.*")) and not list(tmp_path.glob(".run*"))
    if case.startswith("too_big"):  # stopped after its first pass, not after its hundreds
        assert err.out.split() == ["step", "0"]


def test_options_of_a_run_are_checked():
    with pytest.raises(UsageError, match="iterations must be an int of at least 1"):
        Options(iterations=0)
    with pytest.raises(UsageError, match="iteration must be an int of at least 0"):
        Options(iteration=-1)
    assert Options(iteration=0).iteration == 0
    with pytest.raises(BackpropvizError, match="written to a file"):
        from backpropviz.output import write_training

        write_training(record_training(EXAMPLES / "training_loop.py", quiet=True), "-")


def test_keep_sums_draws_each_addition_of_every_pass(tmp_path):
    script = _script(tmp_path, ENGINE_IN_MAIN)

    def additions(run):
        return {sum(attrs.get("op") == "add" for _, attrs in it.graph.nodes(data=True))
                for it in run.iterations}

    folded = record_training(script, Options(iterations=2), quiet=True)
    kept = record_training(script, Options(iterations=2, keep_sums=True), quiet=True)
    assert additions(folded) == {4}  # w*x + b for each point, then sum()'s one +
    assert additions(kept) == {6}  # ... and sum()'s 0 + e1, + e2, + e3 one by one
    assert [it.loss for it in kept.iterations] == [it.loss for it in folded.iterations]


def test_the_memory_of_pass_k_is_the_same_for_every_pass_of_a_fixed_batch(tmp_path, capsys):
    peaks = []
    for k in (0, 3):
        out = tmp_path / f"memory{k}.json"
        assert main(["memory", str(EXAMPLES / "training_loop.py"), "--iteration", str(k),
                     "-o", str(out)]) == 0
        peaks.append(json.loads(out.read_text())["peak_bytes"])
    assert peaks[0] == peaks[1] > 0
    assert main(["memory", str(EXAMPLES / "training_loop.py"), "--iteration", "5",
                 "-o", str(tmp_path / "late.json")]) == 2
    assert "ran 5 backward passes" in capsys.readouterr().err


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_a_loop_drawn_whole_says_it_is_its_last_pass_with_that_passs_numbers(loop, tmp_path):
    # `render train.py` (no --iterations) draws the graph of the last backward() call:
    # the figure and the clip's title card say so, and how many passes came before.
    from backpropviz.animate.cards import title_card
    from backpropviz.animate.mobjects import TextStore
    from backpropviz.script import graph_of_script
    from backpropviz.style import THEMES

    source, probe, numbers = LOOPS[loop]
    if "torch" in source:
        pytest.importorskip("torch")
    reference = _reference(source, probe, numbers)
    G = graph_of_script(_script(tmp_path, source), quiet=True)
    earlier = len(reference) - 1
    assert G.graph["earlier_passes"] == earlier
    assert any(note.startswith(f"drawn: the script's last backward pass; {earlier} earlier "
                               "ones ran on graphs of their own") and
               "`backpropviz render train.py --iterations` draws each" in note
               for note in G.graph["notes"])
    _, words = title_card(G, TextStore(), THEMES["light"], 4, backward=True)
    assert f"the script's last backward pass, after {earlier} others: its numbers" in words
    loss, parameters = reference[-1]
    [root] = G.graph["roots"]
    assert G.nodes[root]["data"] == pytest.approx(loss, rel=1e-12)
    drawn = {attrs.get("label"): attrs for _, attrs in G.nodes(data=True)}
    # (the parameters the figure names as the reference does: all but those of a list)
    named = [name for name in parameters if name in drawn]
    assert len(named) == (0 if loop in SETS else len(parameters))
    for name in named:
        value, grad, _ = parameters[name]
        assert drawn[name]["data"] == value and drawn[name]["grad"] == grad


@pytest.mark.parametrize("source", [
    # two losses from one trunk, both drawn: no earlier pass left out
    (Path(__file__).resolve().parent / "torch_scripts" / "two_losses.py").read_text(),
    # one loss, its backward() run twice on the same graph
    "import torch\nw = torch.tensor(2.0, requires_grad=True)\nL = w * w\n"
    "L.backward(retain_graph=True)\nL.backward()\n",
    # one backward() call
    "from backpropviz import Value\nw = Value(2.0)\nL = w * w + w\nL.backward()\n",
])
def test_a_graph_whose_every_pass_is_drawn_says_nothing_of_earlier_ones(source, tmp_path):
    from backpropviz.script import graph_of_script

    if "torch" in source:
        pytest.importorskip("torch")
    G = graph_of_script(_script(tmp_path, source), quiet=True)
    assert "earlier_passes" not in G.graph
    assert not any("earlier" in note for note in G.graph.get("notes", ()))


def test_an_update_of_four_parameters_is_one_line_of_the_legend(tmp_path):
    # (a two-layer nn.Sequential's four tensors: one note, as another engine's loop gets)
    pytest.importorskip("torch")
    from backpropviz.script import graph_of_script

    G = graph_of_script(_script(tmp_path, TORCH_SGD), quiet=True)
    changed = [note for note in G.graph["notes"] if "changed after" in note]
    assert changed == ["4 tensors changed after the forward pass used them (model.0.weight, "
                       "model.0.bias and 2 more); a picture draws them as it used them (a "
                       "view of modules holds them inside)"]
