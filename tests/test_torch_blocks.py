"""The PyTorch blocks of a deep-learning lecture, drawn with plain PyTorch's numbers.

Each script in torch_scripts/ is drawn by the command line; every named value's
data and gradient is compared with the same script run by plain PyTorch, which
keeps the gradient of every intermediate (retain_grad) for the comparison.
"""

from __future__ import annotations

import contextlib
import re
import runpy
from pathlib import Path

import numpy as np
import pytest
import torch
from test_cli import script, written_graph
from test_rnn_names import CELL_NAME
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from backpropviz import cli
from backpropviz.check import disagreements
from backpropviz.ir import operand_edges, result_of
from backpropviz.torch_import import TorchImportError, capture, from_torch
from backpropviz.views import closed_groups

SCRIPTS = Path(__file__).resolve().parent / "torch_scripts"
BLOCKS = ["attention_split", "several_results", "multihead_attention", "lstm_cell", "lstm",
          "gru", "custom_function"]


class _KeepGrads(TorchFunctionMode):
    """Plain PyTorch, except that every tensor an op makes or uses keeps its .grad after
    backward (a torch.autograd.Function's result is first seen where it is used)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for tensor in tree_flatten((result, args, kwargs))[0]:
            if isinstance(tensor, torch.Tensor) and tensor.grad_fn is not None:
                tensor.retain_grad()
        return result


def reference(name: str) -> dict:
    """The script's names after plain PyTorch ran it."""
    with _KeepGrads():
        return runpy.run_path(str(SCRIPTS / f"{name}.py"), run_name="__main__")


def tensor_named(namespace: dict, label: str):
    """``q`` -> the tensor q; ``lstm.weight_ih_l0`` -> that parameter of the module lstm;
    ``xs[0]`` -> the first row of xs, ``x[:, 1]`` its second column."""
    if label in namespace:
        return namespace[label]
    indexed = re.fullmatch(r"(\w+)\[(\d+)\]", label)
    if indexed:
        return namespace[indexed.group(1)][int(indexed.group(2))]
    column = re.fullmatch(r"(\w+)\[:, (\d+)\]", label)  # x[:, t] of a batch-first sequence
    if column:
        return namespace[column.group(1)][:, int(column.group(2))]
    module, _, parameter = label.partition(".")
    return namespace[module].get_parameter(parameter)


def close(drawn, expected) -> None:
    np.testing.assert_allclose(np.asarray(drawn, dtype=np.float64),
                               expected.detach().double().numpy(), rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> dict:
    """Each block's IR as ``backpropviz render SCRIPT -o SCRIPT.json`` wrote it, run in this
    process as the entry point runs it (torch loaded once). One script a call: several
    would be forked, and a fork of a process whose torch threads ran can hang."""
    folder = tmp_path_factory.mktemp("blocks")
    graphs = {}
    for name in BLOCKS:
        out = folder / f"{name}.json"
        assert cli.main(["render", str(SCRIPTS / f"{name}.py"), "-o", str(out)]) == 0
        graphs[name] = written_graph(out)
    return graphs


def values(G) -> dict:
    return {attrs["label"]: attrs for _, attrs in G.nodes(data=True)
            if attrs["kind"] == "value" and attrs["label"]}


EXPECTED_NAMES = {
    "attention_split": {"x", "q", "k", "v", "att", "y", "loss", "c_attn.weight", "c_attn.bias"},
    "several_results": {"scores", "left", "right", "first", "second", "best", "top", "loss"},
    "multihead_attention": {"x", "out", "loss", "attention.in_proj_weight",
                            "attention.out_proj.weight"},
    "lstm_cell": {"h", "c", "loss", "cell.weight_ih", "cell.weight_hh", "cell.bias_ih"},
    "lstm": {"h_n", "score", "loss", "lstm.weight_ih_l0", "lstm.weight_hh_l1",
             "head.weight"},
    "gru": {"x", "out", "loss", "gru.weight_ih_l0", "gru.weight_hh_l0_reverse"},
    "custom_function": {"W", "x", "z", "h", "loss"},
}


@pytest.mark.parametrize("name", BLOCKS)
def test_every_drawn_number_is_plain_pytorchs(drawn, name):
    G, namespace = drawn[name], reference(name)
    named = values(G)
    assert EXPECTED_NAMES[name] <= set(named)
    for label, attrs in named.items():
        if CELL_NAME.fullmatch(label) and label not in namespace:
            continue  # a gate or state the written-out cell named: test_rnn_names
        tensor = tensor_named(namespace, label)
        close(attrs["data"], tensor)
        if tensor.grad is None:
            assert attrs["grad"] is None, label
        else:
            close(attrs["grad"], tensor.grad)
    # The picture adds up: each op's drawn result is that op of its drawn operands.
    assert disagreements(G) == []


def test_split_draws_one_op_per_result_each_edge_its_own_share(drawn):
    G, namespace = drawn["attention_split"], reference("attention_split")
    splits = {G.nodes[op]["op"]: op for op in G if G.nodes[op].get("op", "").startswith("split")}
    assert sorted(splits) == ["split[0]", "split[1]", "split[2]"]
    (qkv,) = {u for op in splits.values() for u, _, _ in operand_edges(G, op)}
    total = 0
    for number, piece in enumerate("qkv"):
        op = splits[f"split[{number}]"]
        assert G.nodes[result_of(G, op)]["label"] == piece
        # What split's backward sent for this piece alone: its gradient in its columns.
        share = torch.zeros(3, 12, dtype=torch.float64)
        share[:, 4 * number:4 * number + 4] = namespace[piece].grad
        (edge,) = operand_edges(G, op)
        close(G.edges[edge]["grad"], share)
        total += share
    close(G.nodes[qkv]["grad"], total)


def test_unbind_and_chunk_shares_add_up_to_the_gradient(drawn):
    G, namespace = drawn["several_results"], reference("several_results")
    named = {attrs["label"]: node for node, attrs in G.nodes(data=True) if attrs.get("label")}
    for whole, pieces in (("scores", ("left", "right")), ("right", ("first", "second"))):
        edges = [edge for piece in pieces
                 for edge in operand_edges(G, next(iter(G.predecessors(named[piece]))))]
        assert {edge[0] for edge in edges} == {named[whole]}
        shares = sum(np.asarray(G.edges[edge]["grad"]) for edge in edges)
        expected = namespace[whole].grad
        if whole == "scores":  # scores also feeds topk
            (topk,) = [op for op in G.successors(named["scores"]) if G.nodes[op]["op"] == "topk"]
            shares = shares + np.asarray(G.edges[named["scores"], topk, 0]["grad"])
        close(shares, expected)


def test_custom_function_is_one_op_whose_backward_fills_its_edge(drawn):
    G, namespace = drawn["custom_function"], reference("custom_function")
    (op,) = [op for op in G if G.nodes[op].get("op") == "MyReLU"]
    assert G.nodes[op]["symbol"] == "MyReLU"
    (edge,) = operand_edges(G, op)
    z, h = namespace["z"], namespace["h"]
    close(G.edges[edge]["grad"], h.grad * (z > 0))  # MyReLU.backward, by hand
    assert G.nodes[edge[0]]["label"] == "z"


def test_custom_function_with_two_results_draws_each_share():
    class SinCos(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t.sin(), t.cos()

        @staticmethod
        def backward(ctx, grad_sin, grad_cos):
            (t,) = ctx.saved_tensors
            return grad_sin * t.cos() - grad_cos * t.sin()

    t0 = torch.tensor([0.5, 2.0])
    with capture() as recording:
        t = t0.clone().requires_grad_()
        s, c = SinCos.apply(t)
        L = (3 * s).sum() + (c * c).sum()
        L.backward()
    G = from_torch(L, names={"t": t, "s": s, "c": c}, recording=recording)
    ops = {G.nodes[op]["op"]: op for op in G if G.nodes[op]["kind"] == "op"}
    # dL/ds = 3 and dL/dc = 2 cos t: each result's share on its own edge.
    (sin_edge,) = operand_edges(G, ops["SinCos[0]"])
    (cos_edge,) = operand_edges(G, ops["SinCos[1]"])
    close(G.edges[sin_edge]["grad"], 3 * t0.cos())
    close(G.edges[cos_edge]["grad"], -2 * t0.cos() * t0.sin())
    close(values(G)["t"]["grad"], t.grad)


def test_a_backward_that_is_not_linear_in_its_gradients_is_refused():
    class Odd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1, t * 2

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            return grad_a * grad_b + grad_a  # no per-result share adds up to this

    with capture() as recording:
        t = torch.tensor([1.0, 2.0], requires_grad=True)
        a, b = Odd.apply(t)
        L = (a * b).sum()
        L.backward()
    with pytest.raises(TorchImportError, match="does not add up"):
        from_torch(L, recording=recording)


@pytest.mark.parametrize("name, module", [("multihead_attention", "attention"),
                                          ("lstm", "lstm"), ("gru", "gru")])
def test_modules_draw_the_block_as_one_op_with_its_parameters_gradients(drawn, name, module):
    G, namespace = drawn[name], reference(name)
    closed = closed_groups(G, modules=True)
    (op,) = [op for op, attrs in closed.nodes(data=True)
             if attrs["kind"] == "op" and attrs["op"] == "group" and attrs["symbol"] == module]
    for u, _, key in closed.in_edges(op, keys=True):
        label = closed.nodes[u]["label"]
        if label and label.startswith(f"{module}."):
            close(closed.edges[u, op, key]["grad"], tensor_named(namespace, label).grad)


def test_lstm_cell_unrolled_draws_each_steps_gates():
    with capture() as recording:
        namespace = runpy.run_path(str(SCRIPTS / "lstm_cell.py"))
    G = from_torch(namespace["loss"], names=namespace, recording=recording)
    ops = [attrs["op"] for _, attrs in G.nodes(data=True) if attrs["kind"] == "op"]
    # Three steps of four gates: σ for input, forget and output, tanh for the candidate.
    assert ops.count("sigmoid") == 9 and ops.count("chunk[3]") == 3
    cells = {tuple(attrs["group_calls"]) for _, attrs in G.nodes(data=True)
             if attrs.get("group") == ["cell"]}
    assert len(cells) == 3


def test_a_later_result_of_a_fused_function_gets_one_sentence(tmp_path, capsys):
    path = script(tmp_path, "weights.py", """
        import torch
        from torch import nn

        torch.manual_seed(0)
        attention = nn.MultiheadAttention(4, 2)
        x = torch.randn(3, 1, 4)
        out, weights = attention(x, x, x)
        loss = weights.pow(2).sum()
        loss.backward()
        """)
    out = tmp_path / "out.svg"
    assert cli.main(["render", str(path), "-o", str(out)]) == 1
    (message,) = capsys.readouterr().err.splitlines()
    assert message.startswith("backpropviz: error: MultiheadAttention's "
                              "multi_head_attention_forward returns 2 tensors")
    assert "uses its first result alone (this one uses result 2)" in message
    assert not out.exists()


@pytest.mark.parametrize("name, sigmoids", [("lstm", 3 * 3 * 2), ("gru", 2 * 3 * 2)])
def test_recurrent_layers_are_drawn_gate_by_gate(drawn, name, sigmoids):
    # lstm: 3 gates of σ, 3 steps, 2 layers; gru: 2 gates of σ, 3 steps, 2 directions.
    ops = [attrs["op"] for _, attrs in drawn[name].nodes(data=True) if attrs["kind"] == "op"]
    assert ops.count("sigmoid") == sigmoids


RECURRENT = {
    "two-layer bidirectional LSTM from a given state": (
        lambda: torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True),
        lambda m, x, h0: m(x, (h0, torch.zeros(4, 2, 4))),
        lambda result: result[0].sum() + result[1][0].pow(2).sum()),
    "batch-first two-layer GRU, no biases": (
        lambda: torch.nn.GRU(3, 4, num_layers=2, batch_first=True, bias=False),
        lambda m, x, h0: m(x),
        lambda result: result[0].pow(2).sum()),
    "GRU cell from a given state": (
        lambda: torch.nn.GRUCell(3, 4),
        lambda m, x, h0: m(x[0], h0[0]),
        lambda result: result.pow(2).sum()),
}


@pytest.mark.parametrize("case", RECURRENT)
def test_recurrent_layers_have_plain_pytorchs_gradients(case):
    make, call, loss_of = RECURRENT[case]
    torch.manual_seed(0)
    x0, h00 = torch.randn(2, 2, 3), torch.randn(4, 2, 4)
    grads = {}
    for drawing in (False, True):
        torch.manual_seed(1)
        module = make()
        with capture() if drawing else contextlib.nullcontext() as recording:
            x, h0 = x0.clone().requires_grad_(), h00.clone().requires_grad_()
            loss = loss_of(call(module, x, h0))
            loss.backward()
        grads[drawing] = {"x": x.grad, "h0": h0.grad,
                          **{f"module.{n}": p.grad for n, p in module.named_parameters()}}
        if drawing:
            G = from_torch(loss, names={"module": module, "x": x, "h0": h0},
                           recording=recording)
            assert disagreements(G) == []
            drawn_grads = {label: attrs["grad"] for label, attrs in values(G).items()}
    for label, grad in grads[False].items():
        if grad is None:
            assert grads[True][label] is None
            continue
        close(grads[True][label], grad)  # the written-out gates give torch's own gradients
        if label in drawn_grads:
            close(drawn_grads[label], grad)
    assert {label for label in grads[False] if label.startswith("module.")} <= set(drawn_grads)


def test_iterating_over_a_tensor_draws_unbind_per_row():
    W0 = torch.tensor([[1.0, -2.0], [3.0, 0.5]])
    with capture() as recording:
        W = W0.clone().requires_grad_()
        first, second = W * 2  # iterating unbinds: one autograd node, two results
        L = (first * second).sum()
        L.backward()
    G = from_torch(L, names={"W": W, "first": first, "second": second}, recording=recording)
    named = values(G)
    close(named["first"]["data"], 2 * W0[0])
    close(named["second"]["grad"], 2 * W0[0])  # dL/dsecond = first
    close(named["W"]["grad"], W.grad)
    assert {G.nodes[op]["op"] for op in G if G.nodes[op]["kind"] == "op"} >= {"unbind[0]",
                                                                             "unbind[1]"}
