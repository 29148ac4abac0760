"""Captions of the backward steps against the IR they are read from."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

from backpropviz import Tensor, Value
from backpropviz.captions import Caption, step_captions
from backpropviz.figure import to_dot
from backpropviz.ir import from_node_link, to_networkx, to_node_link
from backpropviz.names import name_parts, value_names
from backpropviz.steps import backward_steps

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


# The scripts built on the engine (a torch script's graph comes from torch_import).
ALL_EXAMPLES = sorted(path.stem for path in EXAMPLES.glob("*.py")
                      if "import torch" not in path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_one_caption_per_step_naming_every_operand(example, name):
    G = example(name)
    captions = step_captions(G)
    steps = backward_steps(G)
    assert len(captions) == len(G.graph["backward_order"]) + 1 == len(steps) + 1
    assert all(isinstance(caption, Caption) and caption.text and caption.tex and caption.rule
               for caption in captions)
    names = value_names(G)
    (root,) = G.graph["roots"]
    top = names[root].text
    assert captions[0].text == f"∂{top}/∂{top} = 1"
    for step, caption in zip(steps, captions[1:], strict=True):
        # The upstream gradient is the op's result; every non-constant operand
        # that received a contribution is on a left-hand side.
        result = names[step.result].text
        assert f"∂{top}/∂{result}" in caption.text or f"∂{top}/∂({result})" in caption.text
        for u, v, key in step.edges:
            if G.nodes[u]["role"] == "const" or G.edges[u, v, key]["grad"] is None:
                continue
            label = G.nodes[u]["label"]
            if label is not None:
                assert f"∂{top}/∂{label} " in caption.text, (label, caption.text)


def test_the_books_equations_for_the_mlp(example):
    captions = [caption.text for caption in step_captions(example("d2l_mlp"))]
    assert captions[0] == "∂L/∂L = 1"
    assert "∂L/∂h = W2ᵀ · ∂L/∂o" in captions[5]
    assert "∂L/∂W2 = ∂L/∂o · hᵀ" in captions[5]
    assert captions[6] == "∂L/∂z = ∂L/∂h ⊙ 1[z>0]"
    assert "∂L/∂W1 = ∂L/∂z · xᵀ" in captions[7]
    tex = step_captions(example("d2l_mlp"))[5].tex
    assert r"\frac{\partial L}{\partial h} = W_{2}^\top \frac{\partial L}{\partial o}" in tex
    rule = step_captions(example("d2l_mlp"))[6].rule
    assert rule.startswith("ReLU passes the gradient only where") and "dead" in rule


def test_add_passes_and_multiply_scales(example):
    captions = step_captions(example("add_mul"))
    assert captions[1].text == "∂e/∂d = c · ∂e/∂e,  ∂e/∂c = d · ∂e/∂e"
    assert captions[2].text == "∂e/∂a = ∂e/∂d,  ∂e/∂b = ∂e/∂d"
    assert captions[1].rule.startswith("a product gives each factor")
    assert captions[2].rule.startswith("addition passes")


@pytest.mark.parametrize("name", ["fork", "d2l_objective", "d2l_mlp_scalar"])
def test_accumulation_is_written_plus_equals_exactly_at_forks(example, name):
    G = example(name)
    seen = set(G.graph["seeds"])
    for step, caption in zip(backward_steps(G), step_captions(G)[1:], strict=True):
        expected = 0
        for u, v, key in step.edges:
            if G.edges[u, v, key]["grad"] is None:
                continue
            expected += u in seen and G.nodes[u]["role"] != "const"
            seen.add(u)
        assert caption.text.count(" += ") == expected, caption.text
        assert ("+=" in caption.rule) == (expected > 0)


def test_unnamed_values_read_as_their_expressions(example):
    G = example("d2l_mlp")
    names = {node: name.text for node, name in value_names(G).items()}
    assert names["v7"] == "o − y"  # o - y: the constant 0 is named by the script's y = 0
    assert names["v9"] == "Σ(o − y)²"
    a, b = Value(1.0, label="a"), Value(2.0, label="b")
    out = (a * b + a) * (b + 3.0) * (a - b) * (a + b)
    out.backward()
    G = to_networkx(out)
    names = value_names(G)
    # As long as its box has room (at least some 26 characters' width), written whole...
    assert names[G.graph["roots"][0]].text == "(a·b + a)·(b + 3)·(a − b)·(a + b)"
    longer = out * (a * b - 3.0) * (b * a + 7.0)
    longer.backward()
    H = to_networkx(longer)
    written = value_names(H)[H.graph["roots"][0]].text
    # ... past its room, its longest operands become "…", as few as it takes.
    assert written == "…·(a·b − 3)·(b·a + 7)"  # (out: the longest, 33 characters)
    captions = step_captions(G)
    assert captions[0].text == "∂L/∂L = 1"  # an unnamed root is called L
    assert all("∂L/∂" in caption.text for caption in captions)


def test_captions_come_from_the_ir_alone(example):
    G = example("d2l_objective")
    assert step_captions(from_node_link(to_node_link(G))) == step_captions(G)


def test_without_backward_there_is_only_step_zero():
    W = Tensor([[1.0, 2.0]], label="W")
    G = to_networkx((W @ Tensor([3.0, 4.0], label="x")).sum())
    (caption,) = step_captions(G)
    assert "forward" in caption.text


@pytest.mark.skipif(shutil.which("latex") is None, reason="LaTeX is not installed")
def test_tex_compiles(example, tmp_path):
    lines = []
    for name in ALL_EXAMPLES:
        lines += [f"\\[{caption.tex}\\]" for caption in step_captions(example(name))]
    document = ("\\documentclass{article}\\usepackage{amsmath}\\usepackage{amssymb}"
                "\\begin{document}\n" + "\n".join(lines) + "\n\\end{document}\n")
    (tmp_path / "captions.tex").write_text(document, encoding="utf-8")
    run = subprocess.run(["latex", "-interaction=nonstopmode", "-halt-on-error", "captions.tex"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout[-2000:]


@pytest.mark.parametrize(("label", "parts", "tex"), [
    ("W1", ("W", "1"), "W_{1}"),
    ("w1_11", ("w", "1,11"), "w_{1,11}"),
    ("x_i", ("x", "i"), "x_{i}"),
    ("x_in", ("x_in", ""), r"\mathrm{x\_in}"),
    ("total_loss", ("total_loss", ""), r"\mathrm{total\_loss}"),
    ("X_train", ("X_train", ""), r"\mathrm{X\_train}"),
    ("h_t", ("h", "t"), "h_{t}"),
    ("W1a", ("W1a", ""), r"\mathrm{W1a}"),
    ("alpha2", ("α", "2"), r"\alpha_{2}"),
    ("lambd", ("λ", ""), r"\lambda"),  # the book's spelling: lambda is a keyword
    ("eta", ("η", ""), r"\eta"),
])
def test_the_caption_and_the_picture_split_a_name_alike(label, parts, tex):
    assert name_parts(label) == parts
    a = Value(1.0, label=label)
    b = a * a
    b.backward()
    G = to_networkx(b)
    assert value_names(G)["v0"].tex == tex
    base, sub = parts
    assert f"<I>{base}</I>" + (f"<SUB>{sub}</SUB>" if sub else "") in to_dot(G)


def test_a_name_written_as_an_expression_is_typeset_alike_in_every_view():
    # A constant named after the script's `lambd / 2`: λ/2 in the text, in TeX
    # and on the box (an italic λ, the 2 upright).
    a = Value(3.0, label="a")
    half = Value(0.05, label="lambd/2")
    b = half * a
    b.backward()
    G = to_networkx(b)
    name = value_names(G)["v1"]
    assert (name.text, name.tex) == ("λ/2", r"\mathrm{\lambda /2}")
    assert "<I>λ</I>/2" in to_dot(G) and "lambd" not in to_dot(G)


def test_a_name_written_as_a_sum_or_product_is_parenthesised_where_it_is_an_operand():
    # micrograd's lecture names its neuron's values by what they are ('x1*w1 + x2*w2'):
    # written bare, ∂o/∂x1*w1 reads as ∂o/∂x1 times w1 and the caption as false.
    x1, w1 = Value(2.0, label="x1"), Value(-3.0, label="w1")
    x2, w2 = Value(0.0, label="x2"), Value(1.0, label="w2")
    x1w1, x2w2 = x1 * w1, x2 * w2
    x1w1.label, x2w2.label = "x1*w1", "x2*w2"
    s = x1w1 + x2w2
    s.label = "x1*w1 + x2*w2"
    n = s + Value(6.8813735870195432, label="b")
    n.label = "n"
    o = n.tanh()
    o.label = "o"
    o.backward()
    captions = step_captions(to_networkx(o))
    worked = [line for caption in captions for line in caption.worked]
    assert "∂o/∂(x1*w1 + x2*w2) = ∂o/∂n = 0.5" in worked
    assert "∂o/∂(x1*w1) = ∂o/∂(x1*w1 + x2*w2) = 0.5" in worked
    assert "∂o/∂x1 = w1 · ∂o/∂(x1*w1) = (−3) · 0.5 = −1.5" in worked
    assert not any(re.search(r"∂x\d\*", line) for line in worked)
    assert any(r"\partial \left(\mathrm{x1*w1}\right)" in caption.tex for caption in captions)



def test_a_negative_number_or_negation_is_parenthesised_after_a_plus(tmp_path):
    # micrograd writes o - 0.25 as o + (-0.25): its value was named "o + −0.25", which
    # reads as a typo; a leading minus may open a sum (−0.25 + o) but not follow a +.
    from backpropviz.script import graph_of_script

    script = tmp_path / "minus.py"
    script.write_text("from micrograd.engine import Value\n"
                      "a, b = Value(2.0), Value(-3.0)\n"
                      "o = a * b\n"
                      "f = (o - 0.25) * (-0.5 + o) * (o + -a)\n"
                      "f.backward()\n", encoding="utf-8")
    G = graph_of_script(script, quiet=True)
    names = {value.text for value in value_names(G).values()}
    assert {"o + (−0.25)", "o + (−0.5)", "a·(−1)"} <= names
    assert not any(re.search(r"[+·−] −", name) for name in names)
    worked = "\n".join(line for caption in step_captions(G) for line in caption.worked)
    assert "∂f/∂(o + (−0.25)) = " in worked
    # the clip's title card writes the root's expression from its operands' names: a
    # named negative number there is parenthesised too (it said "q·w + p + −0.25")
    from backpropviz.animate.cards import what_is_computed
    from backpropviz.views import drawn_graph

    script.write_text("from micrograd.engine import Value\n"
                      "p, q, w = Value(2.0), Value(-3.0), Value(0.5)\n"
                      "L = p - 0.25 + q * w\n"
                      "L.backward()\n", encoding="utf-8")
    clips = drawn_graph(graph_of_script(script, quiet=True))  # (its + chain folded)
    written = what_is_computed(clips, 4)[0]
    assert "(−0.25)" in written and "−0.25" not in written.replace("(−0.25)", "")
    # a negation op (our engine's) too
    a, o = Value(2.0, label="a"), Value(-6.0, label="o")
    f = (o + -a) * (-a + o)
    f.label = "f"
    f.backward()
    names = {value.text for value in value_names(to_networkx(f)).values()}
    assert {"o + (−a)", "−a + o"} <= names


# Every op of the registry, built by the engine on small operands, with the
# derivative of its result (summed, so that the root is a scalar) by hand.
def _pair(a, b):
    return Tensor(a, label="a"), Tensor(b, label="b")


_BUILDS = {
    "add": lambda: (lambda a, b: a + b)(*_pair([1.0, 2.0], [3.0, -4.0])),
    "sub": lambda: (lambda a, b: a - b)(*_pair([1.0, 2.0], [3.0, -4.0])),
    "mul": lambda: (lambda a, b: a * b)(*_pair([1.0, 2.0], [3.0, -4.0])),
    "div": lambda: (lambda a, b: a / b)(*_pair([1.0, 2.0], [4.0, -2.0])),
    "pow": lambda: Tensor([3.0, -1.0], label="a") ** 3,
    "neg": lambda: -Tensor([3.0, -1.0], label="a"),
    "matmul": lambda: (lambda a, b: a @ b)(*_pair([[1.0, 2.0]], [3.0, -4.0])),
    "relu": lambda: Tensor([3.0, -1.0], label="a").relu(),
    "dropout": lambda: Tensor([3.0, -1.0, 2.0], label="a").dropout(0.5, seed=1),
    "tanh": lambda: Tensor([0.5, -1.0], label="a").tanh(),
    "exp": lambda: Tensor([0.5, -1.0], label="a").exp(),
    "log": lambda: Tensor([0.5, 2.0], label="a").log(),
    "sigmoid": lambda: Tensor([0.5, -1.0], label="a").sigmoid(),
    "sqrt": lambda: Tensor([4.0, 9.0], label="a").sqrt(),
    "square": lambda: Tensor([3.0, -1.0], label="a").square(),
    "sqnorm": lambda: Tensor([3.0, -1.0], label="a").sqnorm(),
    "sum": lambda: Tensor([3.0, -1.0], label="a").sum(),
    "mean": lambda: Tensor([3.0, -1.0], label="a").mean(),
    "transpose": lambda: Tensor([[3.0, -1.0]], label="a").T,
    "getitem": lambda: Tensor([3.0, -1.0, 2.0], label="a")[1],
}


def test_every_registry_op_has_a_numbers_template_for_every_operand():
    from backpropviz import ops
    for name in ops.names():
        op = ops.get(name)
        for arity, form in op.forms.items():
            assert len(form.numbers) == len(form.derivatives), (name, arity)
            assert all(template.strip() for template in form.numbers), (name, arity)
    assert set(_BUILDS) == set(ops.names()), "a registry op the caption test does not build"


@pytest.mark.parametrize("name", sorted(_BUILDS))
def test_every_op_is_worked_with_the_engines_numbers(name):
    from backpropviz import ops
    from backpropviz.formatting import number_text
    result = _BUILDS[name]()
    result.label = "r"
    out = result.sum() if result.data.ndim else result * 1.0
    out.label = "L"
    out.backward()
    G = to_networkx(out)
    (op,) = [v for v, a in G.nodes(data=True) if a["kind"] == "op" and a["op"] == name]
    step = next(s for s in backward_steps(G) if s.op == op)
    worked = step_captions(G)[step.index].worked
    # The upstream gradient dL/dr is 1 everywhere (r summed, or times 1).
    for u, _, key in step.edges:
        edge = G.edges[u, op, key]
        label = G.nodes[u]["label"]
        (line,) = [line for line in worked if line.startswith(f"∂L/∂{label} =")]
        assert "$" not in line and line.count("=") >= 2, line
        # The last number is the contribution the engine recorded...
        # (≈ where the numbers as written give it only rounded)
        assert line.endswith((" = " + number_text(edge["grad"]),
                              " ≈ " + number_text(edge["grad"]))), line
        # ...which is what the op's derivative gives by finite differences.
        data = np.asarray(G.nodes[u]["data"], dtype=float)
        numeric = np.zeros_like(data)
        for index in np.ndindex(data.shape):
            numeric[index] = _finite_difference(name, G, op, u, index)
        assert np.allclose(edge["grad"], numeric, atol=1e-4), (line, numeric)
        # The numbers put in are the recorded operands and result the template names, at
        # the caption's digits, or at a few more where those would not give the result
        # as written (tanh's 1 − r², which cancels: 1 − 0.4621² is 0.7865, not 0.7864).
        template = ops.get(name).form(len(step.edges)).numbers[edge["arg"]]
        operands = {"a": step.edges[0][0], "b": step.edges[-1][0], "r": step.result}
        for field, value in operands.items():
            if "$" + field in template or "${" + field + "}" in template:
                assert any(number_text(G.nodes[value]["data"], digits) in line
                           for digits in range(4, 8)), (field, line)


def _finite_difference(name, G, op, u, index, h=1e-6):
    """d(sum of the op's result)/d(operand u at index), re-running the op on numpy."""
    operands = [np.asarray(G.nodes[w]["data"], dtype=float) for w, _, _ in
                sorted(G.in_edges(op, keys=True), key=lambda e: G.edges[e]["arg"])]
    which = [w for w, _, _ in sorted(G.in_edges(op, keys=True),
                                     key=lambda e: G.edges[e]["arg"])].index(u)
    attrs = G.nodes[op]
    mask = np.asarray(attrs.get("mask", 1.0))
    functions = {
        "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b, "pow": lambda a: a ** attrs.get("exponent"),
        "neg": lambda a: -a, "matmul": lambda a, b: a @ b, "relu": lambda a: np.maximum(a, 0),
        "dropout": lambda a: a * mask / (1 - attrs.get("p", 0)), "tanh": np.tanh,
        "exp": np.exp, "log": np.log, "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
        "sqrt": np.sqrt, "square": np.square, "sqnorm": lambda a: np.sum(a * a),
        "sum": np.sum, "mean": np.mean, "transpose": lambda a: a.T,
        "getitem": lambda a: a[1]}

    def total(shift):
        moved = [x.copy() for x in operands]
        moved[which][index] += shift
        return float(np.sum(functions[name](*moved)))
    return (total(h) - total(-h)) / (2 * h)


def test_the_books_example_with_its_numbers(example):
    # SEED.md: e = (a + b) c at a = 2, b = 1, c = −3; ∂e/∂d = c = −3, ∂e/∂c = d = 3.
    worked = [caption.worked for caption in step_captions(example("add_mul"))]
    assert worked[0] == ("∂e/∂e = 1",)
    assert worked[1] == ("∂e/∂d = c · ∂e/∂e = (−3) · 1 = −3", "∂e/∂c = d · ∂e/∂e = 3 · 1 = 3")
    assert worked[2] == ("∂e/∂a = ∂e/∂d = −3", "∂e/∂b = ∂e/∂d = −3")


def test_a_fork_shows_its_running_sum_before_and_after(example):
    # J = L + s: ∂J/∂W2 = λ W2 = [0.2, −0.1] through s first, then ∂J/∂o hᵀ =
    # (−2)[0, 2] = [0, −4] through the loss (by hand, SEED.md's objective).
    lines = [line for caption in step_captions(example("d2l_objective"))
             for line in caption.worked]
    assert "∂J/∂W2 += ∂J/∂o · hᵀ = [−2] · [0; 2]ᵀ = [0, −4]" in lines
    assert "∂J/∂W2 = [0.2, −0.1] + [0, −4] = [0.2, −4.1]" in lines
    # the gate's 1[z > 0] at z = [−1; 2] is [0; 1]: the first unit is dead
    assert "∂J/∂z = ∂J/∂h ⊙ 1[z>0] = [−4; 2] ⊙ [0; 1] = [0; 2]" in lines


def test_large_operands_leave_the_numbers_to_the_picture():
    W = Tensor(np.arange(12.0).reshape(3, 4), label="W", requires_grad=True)
    x = Tensor(np.ones(4), label="x")
    L = (W @ x).sum()
    L.label = "L"
    L.backward()
    captions = step_captions(to_networkx(L))
    lines = [line for caption in captions for line in caption.worked]
    # W (12 entries) is not written out, but the gradient it sends x is: Wᵀ 1,
    # the column sums of W by hand.
    assert "∂L/∂x = Wᵀ · ∂L/∂(W x) = [12; 15; 18; 21]" in lines
    # Where the operands are small, their numbers are: ∂L/∂W = 1 xᵀ.
    assert ("∂L/∂W = ∂L/∂(W x) · xᵀ = [1; 1; 1] · [1; 1; 1; 1]ᵀ = "
            "[1, 1, 1, 1; 1, 1, 1, 1; 1, 1, 1, 1]") in lines


def test_groups_and_compact_views_are_worked_too(example):
    from backpropviz.views import drawn_graph
    G = example("d2l_figure")
    for view in (drawn_graph(G), drawn_graph(G, compact_view=True)):
        lines = [line for caption in step_captions(view) for line in caption.worked]
        # The group s = λ/2 (‖W1‖² + ‖W2‖²) sends λ W1 back: its number, recorded.
        assert "∂J/∂W1 = ∂s/∂W1 · ∂J/∂s = ∂s/∂W1 · 1 = [0.1, −0.1; 0, 0.1]" in lines


def test_a_group_that_computes_the_loss_names_its_own_derivative_not_the_answer():
    # with group("loss"): L = ... drawn closed: its local derivative is the
    # function's, ∂loss/∂h; ∂L/∂h · ∂L/∂L would define ∂L/∂h by itself.
    from backpropviz import group
    from backpropviz.views import drawn_graph
    W = Tensor([[1.0, -1.0], [0.5, 1.0]], requires_grad=True, label="W")
    h = (W @ Tensor([1.0, 2.0], label="x")).relu()
    h.label = "h"
    with group("loss"):
        L = (h ** 2).sum() / 2
    L.label = "L"
    L.backward()
    first = step_captions(drawn_graph(to_networkx(L)))[1]
    assert first.text == "∂L/∂h = ∂loss/∂h · ∂L/∂L"
    assert first.worked == ("∂L/∂h = ∂loss/∂h · ∂L/∂L = ∂loss/∂h · 1 = [0; 2.5]",)


def test_backward_from_several_roots_says_it_differentiates_their_sum():
    # backward from p and q at once (torch.autograd.backward([p, q])) is the
    # gradient of p + q; a root already named L leaves the letter to it.
    for first in ("p", "L"):
        a, b = Value(2.0, label="a"), Value(3.0, label="b")
        p, q = a * b, a + b
        p.label, q.label = first, "q"
        G = to_networkx(p, q)
        G.graph["seeds"] = {node: 1.0 for node in G.graph["roots"]}
        seed = step_captions(G, 4)[0]
        total = "J" if first == "L" else "L"
        assert seed.rule == (f"seeds: backward starts from {first} and q at once, so it "
                             f"differentiates {total} = {first} + q")
        assert seed.worked == (f"∂{total}/∂{first} = 1,  ∂{total}/∂q = 1",)


def test_a_long_expression_is_shortened_by_its_longest_operand_and_never_to_dots_alone():
    # (w·1 + b − 3) squared as e·e: 27 characters, each operand long; "…·…" would
    # say nothing, so it stays whole. A longer sum loses its longest term only.
    w, b = Value(2.0, label="w"), Value(-1.0, label="b")
    e = w * 1.0 + b - 3.0
    square = e * e
    tail = square + Value(5.0, label="c") * w
    total = tail + Value(1.0, label="velocity_term")
    total.label = "total"
    total.backward()
    names = value_names(to_networkx(total))
    written = {name.text for name in names.values()}
    assert "(w·1 + b − 3)·(w·1 + b − 3)" in written and "…·…" not in written
    assert "… + c·w" in written  # the square, the longest, is the one cut


def test_a_residual_chains_names_are_cut_past_twice_their_room():
    # h = tanh(h) + h, sixteen times: each name written whole holds the one before it
    # twice (the last would hold x 2^16 times, some 650,000 characters, as a ResNet's
    # module calls did). Kept whole only up to twice its room, every name stays short.
    x = Value(0.5, label="x")
    h = x
    for _ in range(16):
        h = h.tanh() + h
    h.backward()
    written = [name.text for name in value_names(to_networkx(h)).values()]
    assert "tanh(x) + x" in written and "tanh(tanh(x) + x) + tanh(x) + x" in written
    assert max(len(text) for text in written) < 60 and "…" in written[-1]


def test_a_vector_times_a_matrix_is_captioned_as_an_outer_product():
    """x @ W with x a vector (a row of inputs): ∂L/∂W is x gᵀ and ∂L/∂x is W g, written
    so, with the numbers autograd holds; u @ v of two vectors gives each g times the other."""
    from backpropviz.script import graph_of_script
    from backpropviz.views import drawn_graph

    script = pathlib.Path(__file__).parent / "torch_scripts" / "vector_times_matrix.py"
    G = drawn_graph(graph_of_script(script, quiet=True))
    lines = [line for caption in step_captions(G, 4) for line in caption.worked]
    share = next(line for line in lines if line.startswith("∂L/∂W += x · (∂L/∂y)ᵀ = "))
    assert share.endswith("= [1; 2] · [7; −1; 2]ᵀ = [7, −1, 2; 14, −2, 4]")
    assert any(line.startswith("∂L/∂u = W · ∂L/∂(u W) = ") for line in lines)
    assert any(line.startswith("∂L/∂v = ∂L/∂s · (u W) = ") for line in lines)
    (W,) = [node for node, label in G.nodes(data="label") if label == "W"]
    assert np.allclose(G.nodes[W]["grad"], [[10, -3, 2.5], [11, 0, 3.5]])  # torch's W.grad


def test_a_forks_first_share_is_said_to_be_one(tmp_path):
    """x feeds sin and ×: the sin step sends x its first share, which a lecturer and a
    student both read as x's whole gradient (∂f/∂x = … ≈ 0.03501, then −0.2125). Its
    rule says it is a first share with more to come; the × step adds the next (+=);
    a value used once is said nothing of."""
    from backpropviz.script import graph_of_script

    script = tmp_path / "chain.py"
    script.write_text("import torch\nx = torch.tensor(1.5, requires_grad=True)\n"
                      "y = torch.tensor(-0.5, requires_grad=True)\n"
                      "f = (x * y + torch.sin(x)) ** 2\nf.backward()\n")
    captions = step_captions(graph_of_script(script, quiet=True))
    (sine,) = [caption for caption in captions if caption.text.startswith("∂f/∂x = cos(x)")]
    assert sine.rule.endswith("; x: a first share, more to come")
    (product,) = [caption for caption in captions if "∂f/∂x += y" in caption.text]
    assert "more to come" not in product.rule and product.rule.endswith("(+=)")
    assert sum("first share" in caption.rule for caption in captions) == 1
