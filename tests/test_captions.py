"""Captions of the backward steps against the IR they are read from."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from backpropviz import Tensor, Value, backward_steps, from_node_link, to_networkx, to_node_link
from backpropviz.captions import Caption, name_parts, step_captions, value_names
from backpropviz.draw import to_dot

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
    assert "ReLU gates" in rule and "dead" in rule


def test_add_passes_and_multiply_scales(example):
    captions = step_captions(example("add_mul"))
    assert captions[1].text == "∂e/∂d = c · ∂e/∂e,  ∂e/∂c = d · ∂e/∂e"
    assert captions[2].text == "∂e/∂a = ∂e/∂d,  ∂e/∂b = ∂e/∂d"
    assert captions[1].rule.startswith("multiply scales")
    assert captions[2].rule.startswith("add passes")


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
    assert len(names[G.graph["roots"][0]].text) <= 20  # long ones become "…"
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
    ("alpha2", ("alpha", "2"), r"\alpha_{2}"),
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
