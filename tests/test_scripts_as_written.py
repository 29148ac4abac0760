"""Scripts as people write them: main() behind __name__, arguments, sys.exit, by-products."""

from __future__ import annotations

import json
import math
import os
import textwrap

import numpy as np
import pytest
from test_cli import EXAMPLES, fails, files, ok, script, written_graph

from backpropviz.names import value_names
from backpropviz.script import graph_of_script
from tests.in_process import run_cli


def values(G) -> dict:
    """Each named value's (data, grad)."""
    return {attrs["label"]: (attrs["data"], attrs["grad"]) for _, attrs in G.nodes(data=True)
            if attrs["kind"] == "value" and attrs["label"]}


MAIN_ENGINE = """
    import sys

    from backpropviz import Value


    def neuron(x, w, b):
        z = w * x + b
        return z.tanh()


    def main():
        steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1
        x = Value(0.5)
        w = Value(-1.0, requires_grad=True)
        b = Value(0.2, requires_grad=True)
        for _ in range(steps):
            y = neuron(x, w, b)
            loss = (y - 1.0) ** 2
            x.grad = w.grad = b.grad = 0.0
            loss.backward()
            w.data -= 0.1 * w.grad
            b.data -= 0.1 * b.grad
        print("argv", sys.argv[1:])


    if __name__ == "__main__":
        main()
    """


def _neuron_by_hand(steps: int) -> dict:
    """The last step's numbers of MAIN_ENGINE, by the chain rule in plain floats."""
    x, w, b = 0.5, -1.0, 0.2
    for _ in range(steps):
        y = math.tanh(w * x + b)
        dy = 2 * (y - 1.0)
        dz = dy * (1 - y * y)
        numbers = {"x": (x, dz * w), "w": (w, dz * x), "b": (b, dz), "y": (y, dy),
                   "loss": ((y - 1.0) ** 2, 1.0)}
        w, b = w - 0.1 * dz * x, b - 0.1 * dz
    return numbers


@pytest.mark.parametrize("steps", [1, 3])
def test_a_graph_inside_main_is_found_from_its_backward_call(steps, tmp_path):
    script(tmp_path, "lecture.py", MAIN_ENGINE)
    done = ok("lecture.py", "-o", "g.json", "--", str(steps), cwd=tmp_path)
    assert done.stdout.decode().split("\n")[0] == f"argv [{str(steps)!r}]"
    G = written_graph(tmp_path / "g.json")
    drawn = values(G)
    # Named after main()'s locals; z died with neuron() before backward ran.
    assert set(drawn) == {"x", "w", "b", "y", "loss"}
    for name, (data, grad) in _neuron_by_hand(steps).items():
        assert drawn[name][0] == pytest.approx(data, rel=1e-12), name
        assert drawn[name][1] == pytest.approx(grad, rel=1e-12), name
    (root,) = G.graph["roots"]
    assert G.nodes[root]["label"] == "loss"


def test_script_arguments_after_the_double_dash(tmp_path):
    script(tmp_path, "args.py", """
        import argparse, sys
        from backpropviz import Value
        parser = argparse.ArgumentParser()
        parser.add_argument("n", type=int)
        parser.add_argument("--lr", type=float)
        options = parser.parse_args()
        print(sys.argv[1:])
        a = Value(float(options.n))
        L = a * options.lr
        """)
    done = ok("args.py", "-o", "g.json", "--", "5", "--lr", "0.5", cwd=tmp_path)
    assert done.stdout.decode().strip() == "['5', '--lr', '0.5']"
    assert values(written_graph(tmp_path / "g.json"))["L"] == (2.5, 1.0)
    # A ROOT before the dash is still a root.
    done = ok("args.py", "L", "-o", "h.json", "--", "2", "--lr", "3", cwd=tmp_path)
    assert values(written_graph(tmp_path / "h.json"))["a"] == (2.0, 3.0)


def test_a_clean_exit_after_the_graph_is_drawn(tmp_path):
    script(tmp_path, "ends.py", MAIN_ENGINE + "    sys.exit(0)\n")
    ok("ends.py", "-o", "g.json", cwd=tmp_path)
    assert values(written_graph(tmp_path / "g.json"))["loss"][1] == 1.0
    script(tmp_path, "top.py", """
        import sys
        from backpropviz import Value
        a = Value(3.0)
        b = a * a
        sys.exit()
        """)
    ok("top.py", "-o", "t.json", cwd=tmp_path)
    assert values(written_graph(tmp_path / "t.json"))["a"] == (3.0, 6.0)


def test_a_non_zero_exit_is_the_scripts_failure(tmp_path):
    script(tmp_path, "three.py", MAIN_ENGINE + "    sys.exit(3)\n")
    assert fails("three.py", "-o", "g.svg", cwd=tmp_path) == (
        "backpropviz: error: three.py exited with status 3, so there is no graph to draw")
    script(tmp_path, "says.py", MAIN_ENGINE + "    sys.exit('no data file')\n")
    done = run_cli("render", "says.py", cwd=tmp_path)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 1
    assert lines[-2:] == ["no data file", "backpropviz: error: says.py exited with status 1, "
                                          "so there is no graph to draw"]
    assert files(tmp_path) == {"three.py", "says.py"}


def test_a_directory_is_said_to_be_one(tmp_path):
    (tmp_path / "lectures").mkdir()
    message = fails("lectures", cwd=tmp_path)
    assert message == ("backpropviz: error: lectures is a directory, not a script: "
                       "name a .py file in it")


def test_the_value_backward_ran_from_wins_over_by_products(tmp_path):
    script(tmp_path, "softmax.py", """
        from backpropviz import Tensor
        logits = Tensor([1.0, 2.0, 0.5], requires_grad=True)
        e = logits.exp()
        probs = e / e.sum()          # kept for printing
        loss = -(probs * Tensor([0.0, 1.0, 0.0])).sum().log()
        loss.backward()
        print(probs.data)
        """)
    ok("softmax.py", "-o", "g.json", cwd=tmp_path)
    G = written_graph(tmp_path / "g.json")
    (root,) = G.graph["roots"]
    assert G.nodes[root]["label"] == "loss"
    # d(-log softmax_1)/d logits = softmax - onehot, by hand.
    z = [1.0, 2.0, 0.5]
    total = sum(map(math.exp, z))
    expected = [math.exp(v) / total - (i == 1) for i, v in enumerate(z)]
    assert values(G)["logits"][1] == pytest.approx(expected, rel=1e-12)


def test_torch_inside_main(tmp_path):
    torch = pytest.importorskip("torch")
    script(tmp_path, "course.py", """
        import torch
        import torch.nn.functional as F

        def main():
            X = torch.tensor([[1.0, 2.0], [0.5, -1.0]])
            target = torch.tensor([0, 1])
            W = torch.tensor([[0.1, -0.2, 0.3], [0.0, 0.4, -0.1]], requires_grad=True)
            logits = X @ W
            probs = F.softmax(logits, dim=1)  # printed, never backward'd from
            loss = F.cross_entropy(logits, target)
            loss.backward()
            print(probs)

        if __name__ == "__main__":
            main()
        """)
    ok("course.py", "-o", "g.json", cwd=tmp_path)
    drawn = values(written_graph(tmp_path / "g.json"))
    assert "probs" not in drawn
    X = torch.tensor([[1.0, 2.0], [0.5, -1.0]], dtype=torch.float64)
    W = torch.tensor([[0.1, -0.2, 0.3], [0.0, 0.4, -0.1]], dtype=torch.float64,
                     requires_grad=True)
    loss = torch.nn.functional.cross_entropy(X @ W, torch.tensor([0, 1]))
    loss.backward()
    assert drawn["loss"][0] == pytest.approx(loss.item(), rel=1e-6)
    assert np.allclose(drawn["W"][1], W.grad.numpy(), rtol=1e-5)


STUDENT_ENGINE = """
    class V:
        def __init__(self, data, children=(), op=""):
            self.data, self.grad, self._prev, self._op = data, 0.0, tuple(children), op
            self._backward = lambda: None

        def __add__(self, other):
            out = V(self.data + other.data, (self, other), "+")
            def _backward():
                self.grad += out.grad
                other.grad += out.grad
            out._backward = _backward
            return out

        def __mul__(self, other):
            out = V(self.data * other.data, (self, other), "*")
            def _backward():
                self.grad += other.data * out.grad
                other.grad += self.data * out.grad
            out._backward = _backward
            return out

        def backward(self, top=True):
            # recursive, as students write it (right for a tree: no value used twice)
            if top:
                self.grad = 1.0
            self._backward()
            for child in self._prev:
                child.backward(top=False)


    def main():
        a, b, c = V(2.0), V(-3.0), V(4.0)
        d = a * b
        e = d + c
        e.backward()
        print(e.data)


    if __name__ == "__main__":
        main()
    """


def test_another_engines_graph_inside_main(tmp_path):
    script(tmp_path, "student.py", STUDENT_ENGINE)
    ok("student.py", "-o", "g.json", cwd=tmp_path)
    G = written_graph(tmp_path / "g.json")
    # e = a*b + c: de/da = b, de/db = a, de/dc = 1, by hand; the recursive calls on
    # the children are not roots.
    assert values(G) == {"a": (2.0, -3.0), "b": (-3.0, 2.0), "c": (4.0, 1.0),
                         "d": (-6.0, 1.0), "e": (-2.0, 1.0)}
    (root,) = G.graph["roots"]
    assert G.nodes[root]["label"] == "e"


def test_micrograd_inside_main(tmp_path):
    pytest.importorskip("micrograd")
    script(tmp_path, "mg.py", """
        from micrograd.engine import Value

        def main():
            a = Value(2.0)
            b = Value(-3.0)
            c = a * b + b ** 2
            c.backward()

        main()
        """)
    ok("mg.py", "-o", "g.json", cwd=tmp_path)
    drawn = values(written_graph(tmp_path / "g.json"))
    # dc/da = b = -3, dc/db = a + 2b = -4, by hand.
    assert (drawn["a"], drawn["b"], drawn["c"]) == ((2.0, -3.0), (-3.0, -4.0), (3.0, 1.0))


def test_contradicting_output_and_format_is_refused_before_the_run(tmp_path):
    script(tmp_path, "loud.py", "print('RAN')\nfrom backpropviz import Value\n"
                                "a = Value(1.0)\nb = a * a\n")
    done = run_cli("render", "loud.py", "-o", "x.png", "--format", "svg", cwd=tmp_path)
    assert done.returncode == 2 and b"RAN" not in done.stdout
    assert done.stderr.decode().strip() == (
        "backpropviz: error: -o x.png is a .png file but --format is svg: give one of them, "
        "or make them agree")
    assert files(tmp_path) == {"loud.py"}
    ok("loud.py", "-o", "x.png", "--format", "png", cwd=tmp_path)  # agreeing is fine
    ok("loud.py", "-o", "x.figure", "--format", "svg", cwd=tmp_path)
    assert (tmp_path / "x.figure").read_bytes().lstrip().startswith(b"<?xml")


def test_max_nodes_limits_drawings_not_exports(tmp_path):
    ok(EXAMPLES / "d2l_mlp_scalar.py", "--max-nodes", "10", "-o", "x.json", cwd=tmp_path)
    ok(EXAMPLES / "d2l_mlp_scalar.py", "--max-nodes", "10", "-o", "x.graphml", cwd=tmp_path)
    assert "more than --max-nodes 10" in fails(EXAMPLES / "d2l_mlp_scalar.py", "--max-nodes",
                                               "10", "-o", "x.svg", cwd=tmp_path)
    assert "more than --max-nodes 10" in fails(EXAMPLES / "d2l_mlp_scalar.py", "--max-nodes",
                                               "10", "-o", "x.dot", cwd=tmp_path)


def test_a_missing_dot_is_found_before_the_script_runs(tmp_path):
    script(tmp_path, "loud.py", "print('RAN')\nfrom backpropviz import Value\n"
                                "a = Value(1.0)\nb = a * a\n")
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    done = run_cli("render", "loud.py", "-o", "x.html", cwd=tmp_path, env=env)
    assert done.returncode == 1 and b"RAN" not in done.stdout
    assert "failed to execute 'dot'" in done.stderr.decode()
    done = run_cli("render", "loud.py", "-o", "x.json", cwd=tmp_path, env=env)
    assert done.returncode == 0 and b"RAN" in done.stdout


@pytest.mark.parametrize("engine", ["from micrograd.engine import Value",
                                    "from backpropviz import Value"])
def test_a_constant_is_not_named_after_a_number_that_merely_equals_it(tmp_path, engine):
    # The 3.0 comes from the data xs, not from lr; the 1.0 of the loop's data is
    # not the loop counter step. A number the arithmetic uses, written nowhere
    # else, names its constant (lam).
    path = script(tmp_path, "fit.py", f"""\
        {engine}
        w = Value(0.5)
        lr = 3.0
        lam = 0.1
        xs = [3.0, 1.0]
        for step in range(2):
            loss = sum(w * x for x in xs) + lam * w
        loss.backward()
        """)
    ok(path, "-o", "fit.json", cwd=tmp_path)
    G = written_graph(tmp_path / "fit.json")
    consts = {attrs["data"]: attrs["label"] for _, attrs in G.nodes(data=True)
              if attrs.get("role") == "const"}
    assert consts.get(3.0) is None and consts.get(1.0) is None
    assert consts.get(0.1) == "lam"


def test_a_constant_is_not_named_after_a_count(tmp_path):
    # Attention's scale, sqrt(C // heads) = 2, equals heads = 2, a count the script
    # sizes things with: the constant is not "heads".
    path = script(tmp_path, "attention.py", """\
        import math
        from backpropviz import Value
        C, heads = 8, 2
        q, k = Value(1.5, label="q"), Value(-0.5, label="k")
        parts = [q] * heads
        att = q * k / math.sqrt(C // heads)
        att.backward()
        """)
    ok(path, "-o", "att.json", cwd=tmp_path)
    G = written_graph(tmp_path / "att.json")
    consts = {attrs["data"]: attrs["label"] for _, attrs in G.nodes(data=True)
              if attrs.get("role") == "const"}
    assert 2.0 in consts and consts[2.0] is None


def test_a_constant_is_not_named_after_a_loop_counter(tmp_path):
    # sum()'s start, 0, equals k in the first pass and k - 1 in the second, and the
    # script does arithmetic with k: still no name of the script's for it.
    path = script(tmp_path, "loop.py", """\
        from micrograd.engine import Value
        w = Value(0.5)
        for k in range(2):
            loss = sum(w * x for x in [2.0, -1.0])
            w.grad = 0.0
            loss.backward()
            w.data -= 0.1 / (k + 1) * w.grad
        """)
    ok(path, "-o", "loop.json", "--iterations", cwd=tmp_path)
    for iteration in json.loads((tmp_path / "loop.json").read_text())["iterations"]:
        labels = {node["label"] for node in iteration["graph"]["nodes"]
                  if node.get("role") == "const"}
        assert not labels & {"k", "k - 1"}, labels


def test_a_constant_computed_from_the_scripts_numbers_is_named_by_that_expression(tmp_path):
    # D2L writes lambd / 2 * (...): Python folds it to 0.05 before the engine
    # sees it, and the figure names that constant λ/2 as the book does; a value
    # that also appears as a literal (the 0.5 of w * 0.5) is left unnamed.
    path = script(tmp_path, "penalty.py", """\
        from backpropviz import Value
        lambd, rate = 0.1, 0.25
        w = Value(2.0, label="w")
        loss = w * 0.5 + lambd / 2 * (w * w) + (rate * 2) * w
        loss.backward()
        """)
    ok(path, "-o", "penalty.json", cwd=tmp_path)
    G = written_graph(tmp_path / "penalty.json")
    consts = {attrs["data"]: attrs["label"] for _, attrs in G.nodes(data=True)
              if attrs.get("role") == "const"}
    assert consts[0.1 / 2] == "lambd/2" and consts[0.5] is None
    ok(path, "-o", "penalty.txt", cwd=tmp_path)
    assert "λ/2 = const" in (tmp_path / "penalty.txt").read_text()


@pytest.mark.parametrize("engine", ["from micrograd.engine import Value",
                                    "from backpropviz import Value"])
def test_keep_sums_draws_each_addition_the_script_wrote(tmp_path, engine):
    # micrograd's neuron: x1w1 + x2w2, then + b. Folded, one + of three terms;
    # kept, two additions, the inner sum's gradient that of n * n: 2n.
    path = script(tmp_path, "neuron.py", f"""\
        {engine}
        x1, x2, w1, w2, b = Value(2.0), Value(0.0), Value(-3.0), Value(1.0), Value(7.5)
        x1w1 = x1 * w1
        x2w2 = x2 * w2
        n = x1w1 + x2w2 + b
        o = n * n
        o.backward()
        """)
    additions = {}
    for flags in ((), ("--keep-sums",)):
        ok(path, "-o", "n.json", *flags, cwd=tmp_path)
        G = written_graph(tmp_path / "n.json")
        additions[flags] = [len(G.in_edges(op)) for op, attrs in G.nodes(data=True)
                            if attrs.get("op") == "add"]
    assert additions[()] == [3] and additions[("--keep-sums",)] == [2, 2]
    inner = next(attrs for _, attrs in G.nodes(data=True) if attrs.get("kind") == "value"
                 and not attrs.get("label") and attrs.get("data") == -6.0 + 0.0)
    assert inner["grad"] == 2 * (-6.0 + 0.0 + 7.5)


def test_a_lectures_mlp_names_its_weights_by_their_paths_as_parameters(tmp_path):
    # micrograd's nn written out in the script (no parameters() method): each weight
    # is model.layers[i].neurons[j].w[k], six steps down, drawn as a parameter, with
    # the gradient the script's own backward left in it.
    path = script(tmp_path, "mlp.py", """\
        import random
        from micrograd.engine import Value

        class Neuron:
            def __init__(self, nin):
                self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
                self.b = Value(0.0)
            def __call__(self, x):
                return sum((wi * xi for wi, xi in zip(self.w, x)), self.b).relu()

        class Layer:
            def __init__(self, nin, nout):
                self.neurons = [Neuron(nin) for _ in range(nout)]
            def __call__(self, x):
                return [n(x) for n in self.neurons]

        class MLP:
            def __init__(self, sizes):
                self.layers = [Layer(a, b) for a, b in zip(sizes, sizes[1:])]
            def __call__(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x[0]

        random.seed(1)
        model = MLP([2, 2, 1])
        loss = (model([0.5, -1.0]) - 1.0) ** 2
        loss.backward()
        """)
    ok(path, "-o", "mlp.json", cwd=tmp_path)
    G = written_graph(tmp_path / "mlp.json")
    drawn = {attrs["label"]: attrs for _, attrs in G.nodes(data=True)
             if str(attrs.get("label", "")).startswith("model.")}
    import runpy
    model = runpy.run_path(str(path))["model"]
    weights = {f"model.layers[{i}].neurons[{j}].{name}": value
               for i, layer in enumerate(model.layers) for j, n in enumerate(layer.neurons)
               for name, value in [*((f"w[{k}]", w) for k, w in enumerate(n.w)), ("b", n.b)]}
    assert set(drawn) == set(weights)
    for name, value in weights.items():
        assert drawn[name]["role"] == "param"
        assert drawn[name]["grad"] == pytest.approx(value.grad, rel=1e-12)


@pytest.mark.parametrize("in_main", [False, True])
def test_a_frozen_modules_output_is_named_by_its_call(tmp_path, in_main):
    # Fine-tuning: a frozen backbone's output has no grad_fn, so autograd sees an input;
    # it was drawn as "input 7×16". It is named by the call that made it, nested calls
    # too (encoder(embed(x))), and its numbers are the backbone's output.
    body = """\
        torch.manual_seed(0)
        backbone = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
        backbone.requires_grad_(False)
        net = Net()
        head = nn.Linear(16, 3)
        x = torch.randn(7, 6)
        y = torch.tensor([0, 2, 1, 2, 0, 1, 1])
        loss = nn.functional.cross_entropy(head(backbone(x)) + net(x), y)
        loss.backward()
        expected = {"backbone(x)": backbone(x),
                    "net.encoder(net.embed(x))": net.encoder(net.embed(x))}
        torch.save(expected, OUT)
    """
    text = textwrap.dedent("""\
        import torch
        from torch import nn

        OUT = {out!r}

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Linear(6, 5).requires_grad_(False)
                self.encoder = nn.Linear(5, 5).requires_grad_(False)
                self.head = nn.Linear(5, 3)
            def forward(self, x):
                return self.head(self.encoder(self.embed(x)))

        """).format(out=str(tmp_path / "expected.pt"))
    body = textwrap.dedent(body)
    if in_main:
        text += "def main():\n" + textwrap.indent(body, "    ") + "\nmain()\n"
    else:
        text += body
    path = tmp_path / "finetune.py"
    path.write_text(text, encoding="utf-8")
    G = graph_of_script(path, quiet=True)
    import torch

    expected = torch.load(tmp_path / "expected.pt")
    names = {name.text: node for node, name in value_names(G).items()}
    for name, tensor in expected.items():
        assert G.nodes[names[name]]["role"] == "input"
        np.testing.assert_allclose(G.nodes[names[name]]["data"], tensor.numpy(), rtol=1e-6)
    assert not any(name.startswith("input ") for name in names)
