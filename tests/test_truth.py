"""Every number drawn is one the engine held: running sums, repeated passes, signs of zero."""

from __future__ import annotations

import math
import os
import random
from pathlib import Path

import numpy as np
import pytest

from backpropviz import Tensor, Value, draw, graph_of_script, render
from backpropviz.captions import step_captions
from backpropviz.check import disagreements
from backpropviz.errors import DrawError
from backpropviz.ir import fold_chains, operand_edges, to_networkx, validate
from backpropviz.steps import backward_steps, gradient_history
from tests.in_process import run_cli


def same_float(a: float, b: float) -> bool:
    """Equal to the last bit, the sign of a zero included."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def random_graph(seed: int) -> Value:
    """A random expression with forks (values used several times), signed zeros among them."""
    rng = random.Random(seed)
    values = [Value(rng.choice([0.0, -0.0, 0.1, -0.3, 0.7, 1.3, -2.1, 3.7]))
              for _ in range(rng.randint(2, 5))]
    for _ in range(rng.randint(3, 14)):
        a, b = rng.choice(values), rng.choice(values)  # may be the same value twice
        kind = rng.randrange(5)
        values.append(a + b if kind == 0 else a * b if kind == 1 else a - b if kind == 2
                      else a.relu() if kind == 3 else a.tanh())
    return values[-1]


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("passes", [1, 2, 3])
def test_the_last_running_sum_is_the_gradient_drawn(seed, passes):
    root = random_graph(seed)
    for _ in range(passes):
        root.backward()
    G = to_networkx(root)
    history = gradient_history(G)
    steps = backward_steps(G)
    final = steps[-1].grads if steps else G.graph["seeds"]
    for node, attrs in G.nodes(data=True):
        if attrs["kind"] != "value" or attrs["grad"] is None or node not in history:
            continue
        assert same_float(history[node][-1], attrs["grad"]), node
        assert same_float(final[node], attrs["grad"]), node


def test_each_running_sum_is_what_the_engine_held_after_that_contribution():
    # dL/dw = x + 2w: w gets 2 + 2 from q = w·w, then 3 from p = w·x.
    w, x = Value(2.0), Value(3.0)
    p = w * x
    q = w * w
    L = p + q
    L.backward()
    G = to_networkx(L, names=locals())
    w_id = next(node for node, label in G.nodes(data="label") if label == "w")
    runs = sorted(G.edges[edge]["running"] for edge in G.out_edges(w_id, keys=True))
    assert runs == [2.0, 4.0, 7.0]
    assert gradient_history(G)[w_id] == [4.0, 7.0]


def test_repeated_passes_are_said_on_the_picture():
    x = Value(3.0)
    y = x * x
    y.backward()
    y.backward()
    G = to_networkx(y)
    assert G.nodes["v0"]["grad"] == 12.0  # accumulated, as in PyTorch
    assert "the sum over the 2 backward passes" in G.graph["notes"][0]


def test_a_tensor_keeps_minus_zero_as_its_first_contribution():
    W = Tensor([[-0.0, 1.0]], requires_grad=True)
    x = Tensor([0.0, 2.0])
    out = (W @ x).sum()
    out.backward()
    G = to_networkx(out)
    W_running = [G.edges[e]["running"] for e in G.out_edges("v0", keys=True)]
    assert W_running == [G.nodes["v0"]["grad"]]
    assert np.signbit(np.asarray(G.nodes["v0"]["grad"])).tolist() == np.signbit(W.grad).tolist()


# ---------------------------------------------------------------- pictures agree with themselves

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(str(path.relative_to(EXAMPLES_DIR)) for path in EXAMPLES_DIR.rglob("*.py")
                 if path.name != "student_value.py")


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_example_agrees_with_itself(script):
    G = graph_of_script(EXAMPLES_DIR / script, quiet=True)
    assert disagreements(G) == []
    ops = sum(1 for _, kind in G.nodes(data="kind") if kind == "op")
    assert ops > 0


def test_disagreements_finds_a_number_that_does_not_add_up(example):
    G = example("add_mul")
    e = G.graph["roots"][0]
    G.nodes[e]["data"] = -8.0  # (a + b)c is -9
    assert len(disagreements(G)) == 1


# ---------------------------------------------------- values as the forward pass used them

TRAINING = """
from backpropviz import Value
w = Value(2.0, requires_grad=True)
b = Value(0.5, requires_grad=True)
x = Value(3.0)
for step in range(3):
    y = w * x + b
    L = (y - 1.0) ** 2
    w.zero_grad(); b.zero_grad()
    L.backward()
    w.data -= 0.01 * w.grad
    b.data -= 0.01 * b.grad
"""

TORCH_TRAINING = """
import torch
x = torch.tensor([1.0, 2.0, 3.0, 4.0]); y = torch.tensor([2.0, 4.1, 5.9, 8.2])
w = torch.tensor(0.5, requires_grad=True); b = torch.tensor(0.0, requires_grad=True)
for step in range(3):
    pred = w * x + b
    loss = ((pred - y) ** 2).mean()
    if w.grad is not None:
        w.grad.zero_(); b.grad.zero_()
    loss.backward()
    w.data -= 0.01 * w.grad
    b.data -= 0.01 * b.grad
"""


def by_label(G) -> dict:
    return {attrs["label"]: attrs for _, attrs in G.nodes(data=True)
            if attrs["kind"] == "value" and attrs["label"]}


def sgd_by_hand(steps: int) -> list[tuple[float, float]]:
    """(w, b) at each forward pass of TRAINING, worked out without any engine."""
    w, b, x, seen = 2.0, 0.5, 3.0, []
    for _ in range(steps):
        seen.append((w, b))
        residual = w * x + b - 1.0
        w, b = w - 0.01 * 2 * residual * x, b - 0.01 * 2 * residual
    seen.append((w, b))
    return seen


def test_a_training_loop_is_drawn_with_the_values_the_last_forward_pass_used(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAINING)
    G = graph_of_script(script, ["L"], quiet=True)
    values = by_label(G)
    *_, (w_used, b_used), (w_now, _) = sgd_by_hand(3)
    assert values["w"]["data"] == pytest.approx(w_used, rel=1e-12)
    assert values["b"]["data"] == pytest.approx(b_used, rel=1e-12)
    assert disagreements(G) == []
    assert any(note.startswith(f"w = {w_used:.4g} → {w_now:.4g} after the update")
               for note in G.graph["notes"])


def test_a_pytorch_training_loop_is_drawn_with_the_values_it_used(tmp_path):
    torch = pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(TORCH_TRAINING)
    G = graph_of_script(script, ["loss"], quiet=True)
    values = by_label(G)
    # The same loop in plain PyTorch, stopped before the last update.
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    y = torch.tensor([2.0, 4.1, 5.9, 8.2])
    w, b = torch.tensor(0.5, requires_grad=True), torch.tensor(0.0, requires_grad=True)
    for step in range(3):
        loss = ((w * x + b - y) ** 2).mean()
        if step == 2:
            used = (w.item(), b.item())
        loss.backward()
        grads = (w.grad.item(), b.grad.item())
        with torch.no_grad():
            w -= 0.01 * w.grad
            b -= 0.01 * b.grad
        w.grad = b.grad = None
    assert (values["w"]["data"], values["b"]["data"]) == pytest.approx(used, rel=1e-6)
    assert (values["w"]["grad"], values["b"]["grad"]) == pytest.approx(grads, rel=1e-5)
    assert disagreements(G) == []
    assert any(note.startswith("w = ") for note in G.graph["notes"])


def test_every_step_of_a_repeated_pass_adds_up():
    a = Value(1.5, requires_grad=True)
    b = a * a + a.exp()
    b.backward()
    b.backward()
    G = to_networkx(b, names={"a": a, "b": b})
    before = {v: attrs["grad"] - sum(g for _, _, g in G.out_edges(v, data="grad") if g)
              for v, attrs in G.nodes(data=True) if attrs.get("passes")}
    running = dict(before)
    for step in backward_steps(G):
        for u, v, k in step.edges:
            share = G.edges[u, v, k]["grad"]
            running[u] = running.get(u, 0.0) + share
            assert G.edges[u, v, k]["running"] == pytest.approx(running[u], rel=1e-12)
    a_id = next(v for v, label in G.nodes(data="label") if label == "a")
    assert G.nodes[a_id]["grad"] == pytest.approx(2 * (2 * 1.5 + math.exp(1.5)))
    captions = [caption.text for caption in step_captions(G)]
    assert not any("∂b/∂a = " in text for text in captions)  # a had a gradient: += only


# ---------------------------------------------------------------- nothing hangs

BENCH_SCRIPTS = Path(__file__).resolve().parent.parent / "bench" / "scripts"


def test_a_sum_chain_is_one_addition_whose_edges_carry_what_they_carried():
    terms = [Value(float(i), label=f"p{i}") for i in range(1, 6)]
    total = sum(p * p for p in terms)  # ((0 + p1²) + p2²) + ...
    total.label = "total"
    total.backward()
    G = to_networkx(total)
    H = fold_chains(G)
    validate(H)
    (add,) = [op for op, name in H.nodes(data="op") if name == "add"]
    squares = [u for u, _, _ in operand_edges(H, add)]
    assert len(squares) == 6  # the 0 that sum() starts from, then five squares
    assert all(H.edges[edge]["grad"] == 1.0 for edge in operand_edges(H, add))
    assert [H.nodes[u]["data"] for u in squares] == [0.0, 1.0, 4.0, 9.0, 16.0, 25.0]
    assert disagreements(H) == []
    assert len(backward_steps(H)) == len(backward_steps(G)) - 4
    for p in terms:  # the gradients are the engine's: d(Σp²)/dp = 2p
        assert p.grad == 2 * p.data
    assert "∂total/∂(p1·p1) = ∂total/∂total,  ∂total/∂(p2·p2)" in step_captions(H)[1].text


def test_micrograds_demo_network_is_drawn_quickly():
    G = graph_of_script(BENCH_SCRIPTS / "micrograd_demo.py", quiet=True)
    assert G.number_of_nodes() < 2000  # its 337-term L2 sum and neurons' sums folded
    assert disagreements(G) == []
    draw(G).pipe("svg")  # in seconds; before folding, dot ran for many minutes


def test_a_long_chain_on_one_weight_is_refused_at_once_and_a_short_loop_drawn(tmp_path,
                                                                            monkeypatch):
    # The activations change from step to step, so it is no loop to roll (test_rolling):
    # the weight's edges span the whole chain, and it is refused before graphviz runs.
    w, h = Value(0.5, label="w"), Value(1.0, label="h0")
    pick = random.Random(3)
    for _ in range(400):
        h = getattr(w * h + 0.1, pick.choice(["tanh", "sigmoid", "relu"]))()
    h.backward()
    with pytest.raises(DrawError, match="graphviz would need minutes for this graph"):
        render(h, "svg", timeout=10)
    pytest.importorskip("torch")
    script = BENCH_SCRIPTS / "rnn_unrolled.py"
    done = run_cli("render", script, "-o", tmp_path / "rnn.svg",
                   env={**os.environ, "STEPS": "30"}, text=True)  # in this process
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("STEPS", "30")
    assert disagreements(graph_of_script(script, quiet=True)) == []


# ---------------------------------------------------------------- every op drawn as what it is


def test_dropout_is_drawn_as_dropout_with_the_mask_it_applied():
    x = Tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
    h = x.dropout(p=0.2, seed=3)
    loss = (h * h).sum()
    loss.backward()
    G = to_networkx(loss, names={"x": x, "h": h, "loss": loss})
    (op,) = [node for node, name in G.nodes(data="op") if name == "dropout"]
    attrs = G.nodes[op]
    kept = np.asarray(attrs["mask"], dtype=bool)
    assert attrs["p"] == 0.2 and attrs["dead"] == (~kept).tolist()
    # By hand: h = m x / 0.8, dloss/dx = 2 h m / 0.8.
    values = by_label(G)
    expected_h = np.where(kept, np.arange(1.0, 6.0) / 0.8, 0.0)
    np.testing.assert_allclose(values["h"]["data"], expected_h)
    np.testing.assert_allclose(values["x"]["grad"], 2 * expected_h * kept / 0.8)
    assert "dropout" in step_captions(G)[-1].rule
    assert "zeroed by dropout" in draw(G).source


def test_pytorch_dropout_is_drawn_as_dropout_not_as_a_product(tmp_path):
    torch = pytest.importorskip("torch")
    script = tmp_path / "drop.py"
    script.write_text("import torch\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"
                      "x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)\n"
                      "h = F.dropout(x, p=0.2)\nloss = (h * h).sum()\nloss.backward()\n")
    G = graph_of_script(script, quiet=True)
    names = [name for _, name in G.nodes(data="op") if name]
    assert names == ["dropout", "mul", "sum"]
    (op,) = [node for node, name in G.nodes(data="op") if name == "dropout"]
    kept = np.asarray(G.nodes[op]["mask"], dtype=bool)
    values = by_label(G)
    # The same in plain PyTorch, with the same seed: the mask torch drew.
    torch.manual_seed(0)
    x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
    h = torch.nn.functional.dropout(x, p=0.2)
    (h * h).sum().backward()
    assert kept.tolist() == (h.detach() != 0).tolist()
    np.testing.assert_allclose(values["h"]["data"], h.detach().numpy())
    np.testing.assert_allclose(values["x"]["grad"], x.grad.numpy())
    assert G.nodes[op]["p"] == 0.2
    assert not any(attrs["role"] == "const" for _, attrs in G.nodes(data=True)
                   if attrs["kind"] == "value")  # no "× 0.2"


def test_a_conv_kernels_numbers_are_drawn(tmp_path):
    torch = pytest.importorskip("torch")
    script = tmp_path / "conv.py"
    script.write_text(
        "import torch\nimport torch.nn.functional as F\n"
        "image = torch.arange(16.0).reshape(1, 1, 4, 4)\n"
        "kernel = torch.tensor([[[[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]]]],"
        " requires_grad=True)\nout = F.conv2d(image, kernel)\nloss = (out ** 2).mean()\n"
        "loss.backward()\n")
    G = graph_of_script(script, quiet=True)
    svg = draw(G).svg
    image = torch.arange(16.0).reshape(1, 1, 4, 4)
    kernel = torch.tensor([[[[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]]]],
                          requires_grad=True)
    (torch.nn.functional.conv2d(image, kernel) ** 2).mean().backward()
    for number in kernel.grad.flatten().tolist():  # each of the kernel's 9 gradients
        assert f">{number:g}<".replace("-", "\u2212") in svg
    assert ">[0,0]<" in svg


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_a_torch_networks_buffers_are_named_and_its_saved_weights_counted(tmp_path, mode):
    pytest.importorskip("torch")
    script = tmp_path / "seq.py"
    script.write_text(
        "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
        "model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.ReLU(), nn.Linear(3, 1))\n"
        f"model.{mode}()\n"
        "x = torch.randn(4, 2)\ny = torch.randn(4, 1)\n"
        "loss = nn.functional.mse_loss(model(x), y)\nloss.backward()\n")
    G = graph_of_script(script, quiet=True)
    values = by_label(G)
    statistics = {"model.1.running_mean", "model.1.running_var"}
    if mode == "eval":  # normalised by its running statistics: they are its inputs, named
        assert statistics <= set(values)
        np.testing.assert_allclose(values["model.1.running_var"]["data"], np.ones(3))
    else:  # normalised by the batch's: the running ones, only updated, are not drawn
        assert not statistics & set(values)
    assert not G.graph.get("notes")
    # The second layer's input needs a gradient, so autograd keeps its weight
    # (transposed): 3 float32 numbers. The first layer's input is data: not kept.
    assert values["model.3.weight"]["stored"] and values["model.3.weight"]["nbytes"] == 12
    assert not values["model.0.weight"]["stored"]


@pytest.mark.parametrize("reset", [True, False])
def test_a_gradient_reset_between_passes_is_not_called_a_sum_of_passes(reset):
    w = Value(1.0, label="w", requires_grad=True)
    for _ in range(3):
        if reset:
            w.grad = 0.0
        loss = (w * 2.0 - 1.0) ** 2
        loss.backward()
    G = to_networkx(loss)
    (node,) = [v for v, label in G.nodes(data="label") if label == "w"]
    # d/dw (2w − 1)² = 4 (2w − 1) = 4 at w = 1, each pass: 4 after a reset, else 3 · 4
    assert G.nodes[node]["grad"] == (4.0 if reset else 12.0)
    notes = " ".join(G.graph.get("notes", []))
    assert ("the 3 backward passes" in notes) == (not reset)
    assert G.nodes[node].get("passes", 1) == (1 if reset else 3)
