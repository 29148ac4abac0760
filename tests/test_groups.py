"""group(): ops drawn as one operator, the gradients unchanged; PyTorch modules as groups."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backpropviz import Tensor, Value, group
from backpropviz.captions import step_captions
from backpropviz.diagram import draw, step_diagrams
from backpropviz.figure import to_dot
from backpropviz.ir import from_node_link, operand_edges, result_of, to_networkx, to_node_link
from backpropviz.names import value_names
from backpropviz.script import graph_of_script
from backpropviz.views import closed_groups, compact

TORCH_SCRIPTS = Path(__file__).resolve().parent / "torch_scripts"


def objective(grouped: bool):
    """The book's objective J = L + s, with the loss and the penalty as groups or not."""
    lambd = 0.1
    x, y = Tensor([1.0, 2.0], label="x"), 0
    W1 = Tensor([[1.0, -1.0], [0.0, 1.0]], requires_grad=True, label="W1")
    W2 = Tensor([[2.0, -1.0]], requires_grad=True, label="W2")
    o = W2 @ (W1 @ x).relu()
    o.label = "o"

    def penalty(a, b):
        return lambd / 2 * (a.sqnorm() + b.sqnorm())

    if grouped:
        with group("l"):
            L = ((o - y) ** 2).sum() / 2
        s = group("s")(penalty)(W1, W2)
    else:
        L = ((o - y) ** 2).sum() / 2
        s = penalty(W1, W2)
    L.label, s.label = "L", "s"
    J = L + s
    J.label = "J"
    J.backward()
    return to_networkx(J), (W1, W2)


def by_label(G):
    return {attrs["label"]: node for node, attrs in G.nodes(data=True) if attrs.get("label")}


def test_ops_made_inside_a_group_carry_it_in_the_ir():
    G, _ = objective(grouped=True)
    groups = {attrs["op"]: attrs.get("group") for _, attrs in G.nodes(data=True)
              if attrs["kind"] == "op"}
    assert groups["div"] == ["l"] and groups["pow"] == ["l"] and groups["sqnorm"] == ["s"]
    assert groups["matmul"] is None and groups["relu"] is None
    H = from_node_link(to_node_link(G))  # the JSON keeps them
    assert [H.nodes[op].get("group") for op in H] == [G.nodes[op].get("group") for op in G]


def test_a_group_is_one_operator_and_the_gradients_are_unchanged():
    grouped, (W1, W2) = objective(grouped=True)
    plain, _ = objective(grouped=False)
    for name, node in by_label(plain).items():  # the engine computed the same
        assert grouped.nodes[by_label(grouped)[name]]["grad"] == plain.nodes[node]["grad"], name
    view = closed_groups(grouped)
    ops_drawn = {attrs["symbol"] for _, attrs in view.nodes(data=True) if attrs["kind"] == "op"}
    assert ops_drawn == {"@", "ReLU", "l", "s", "+"}
    names = by_label(view)
    s_op = next(op for op, attrs in view.nodes(data=True) if attrs.get("symbol") == "s")
    l_op = next(op for op, attrs in view.nodes(data=True) if attrs.get("symbol") == "l")
    assert result_of(view, s_op) == names["s"] and result_of(view, l_op) == names["L"]
    # By hand: s = λ/2 (‖W1‖² + ‖W2‖²) sends λ W1 and λ W2 back; L = ½ (o − y)² sends o − y.
    edges = {view.nodes[u].get("label"): view.edges[u, v, k]["grad"]
             for op in (s_op, l_op) for u, v, k in operand_edges(view, op)}
    assert np.allclose(edges["W1"], 0.1 * np.array([[1.0, -1.0], [0.0, 1.0]]))
    assert np.allclose(edges["W2"], 0.1 * np.array([[2.0, -1.0]]))
    assert edges["o"] == [-2.0]
    # the unnamed numbers (y = 0 here, the 2 of "/ 2", λ/2) are inside their groups
    assert set(edges) == {"W1", "W2", "o"}
    # the values' final gradients are the engine's, in the view as in the IR
    assert np.allclose(view.nodes[names["W1"]]["grad"], W1.grad)
    assert np.allclose(view.nodes[names["W2"]]["grad"], W2.grad)


def test_the_view_agrees_with_itself_step_by_step():
    G, _ = objective(grouped=True)
    view = closed_groups(G)
    diagrams = step_diagrams(G)
    assert len(diagrams) == len(view.graph["backward_order"]) + 1 == 7
    captions = step_captions(view)
    assert "∂J/∂o = ∂L/∂o · ∂J/∂L" in [caption.text for caption in captions]
    # the last step shows the engine's final gradients
    assert diagrams[-1].source == to_dot(G, step=len(view.graph["backward_order"]))


def test_expand_draws_each_group_open_in_a_box():
    G, _ = objective(grouped=True)
    closed = to_dot(G)
    opened = to_dot(G, expand=True)
    assert "cluster" not in closed and 'class="op group"' in closed
    assert opened.count("subgraph cluster_group") == 2
    assert 'label="l"' in opened and 'label="s"' in opened and "op group" not in opened
    assert 'label="(·)²"' in opened and 'label="(·)²"' not in closed


def test_groups_nest_and_the_outermost_is_drawn():
    a = Value(2.0, label="a")
    with group("outer"):
        b = a * 3.0
        with group("inner"):
            c = b.tanh()
        d = c + 1.0
    d.label = "d"
    d.backward()
    G = to_networkx(d)
    assert [attrs.get("group") for _, attrs in G.nodes(data=True) if attrs["kind"] == "op"] \
        == [["outer"], ["outer", "inner"], ["outer"]]
    view = closed_groups(G)
    assert [attrs["symbol"] for _, attrs in view.nodes(data=True) if attrs["kind"] == "op"] \
        == ["outer"]
    (edge,) = operand_edges(view, next(op for op in view if view.nodes[op]["kind"] == "op"))
    # d(tanh(3a) + 1)/da = 3 (1 − tanh²(3a)), at a = 2
    assert view.edges[edge]["grad"] == pytest.approx(3 * (1 - np.tanh(6.0) ** 2))


def test_a_group_with_two_results_used_outside_stays_open():
    a = Value(2.0, label="a")
    with group("both"):
        b = a * 3.0
        c = a + 1.0
    out = b * c
    out.backward()
    view = closed_groups(to_networkx(out))
    assert {attrs["op"] for _, attrs in view.nodes(data=True) if attrs["kind"] == "op"} \
        == {"mul", "add"}


def test_group_names_are_checked():
    with pytest.raises(TypeError, match="non-empty str"):
        group("")


def test_compact_keeps_named_values_and_closes_the_rest(example):
    G = example("d2l_objective")
    view = compact(closed_groups(G))
    labels = sorted(attrs["label"] for _, attrs in view.nodes(data=True)
                    if attrs["kind"] == "value" and attrs["label"])
    unnamed = [node for node, attrs in view.nodes(data=True)
               if attrs["kind"] == "value" and not attrs["label"] and view._pred[node]]
    assert unnamed == []  # every box drawn for a computed value has a name
    assert {"x", "W1", "W2", "z", "h", "o", "y", "L", "s", "J"} <= set(labels)
    loss = next(op for op, attrs in view.nodes(data=True) if attrs.get("op") == "group"
                and result_of(view, op) == by_label(view)["L"])
    assert view.nodes[loss]["symbol"] == "Σ(o − y)² / 2"


def test_a_compact_operator_is_named_as_the_boxes_are(example):
    # w1_11·x1 + w1_12·x2 is drawn w₁,₁₁·x₁ + w₁,₁₂·x₂: italic names with subscripts
    source = to_dot(example("d2l_mlp_scalar"), compact=True)
    labels = [line for line in source.splitlines() if 'class="op group"' in line]
    assert len(labels) == 4  # the two z's, o, and (o − y)² / 2
    for line in labels:
        assert "_" not in line.split("label=", 1)[1].split(" fontname=", 1)[0]
    assert sum("<I>w</I><SUB>" in line and "<I>x</I><SUB>" in line for line in labels) == 2


def test_torch_modules_are_groups_drawn_at_module_level():
    torch = pytest.importorskip("torch")
    G = graph_of_script(TORCH_SCRIPTS / "sequential.py", quiet=True)
    assert set(G.graph["module_groups"]) >= {"model", "model.0", "model.1", "model.2"}
    view = closed_groups(G, modules=True)
    # (nn.ReLU, one op of no parameters, is drawn as that op: a ReLU's rule and marks)
    assert [attrs["symbol"] for _, attrs in view.nodes(data=True) if attrs["kind"] == "op"] \
        == ["model.0", "ReLU", "model.2", "mse_loss"]
    assert closed_groups(G) is G  # modules stay open unless asked
    # The parameters' gradients are autograd's, as plain PyTorch computes them.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    X = torch.tensor([[1.0, 2.0], [0.5, -1.0]])
    torch.nn.functional.mse_loss(model(X), torch.tensor([[1.0], [0.0]])).backward()
    names = by_label(view)
    for name, parameter in model.named_parameters():
        assert np.allclose(view.nodes[names[f"model.{name}"]]["grad"], parameter.grad.numpy())
    # each module's operand edge from its weight carries the weight's whole gradient
    first = next(op for op, attrs in view.nodes(data=True) if attrs.get("symbol") == "model.0")
    sent = {view.nodes[u]["label"]: view.edges[u, v, k]["grad"]
            for u, v, k in operand_edges(view, first)}
    assert np.allclose(sent["model.0.weight"], model[0].weight.grad.numpy())


def test_a_drawn_group_is_named_in_italics_and_modules_plainly(example):
    G, _ = objective(grouped=True)
    assert "<I>l</I>" in to_dot(G) and "<I>s</I>" in to_dot(G)
    torch_graph = graph_of_script(TORCH_SCRIPTS / "sequential.py", quiet=True)
    module_level = to_dot(torch_graph, modules=True)
    assert "model.0<BR/>" in module_level and ">Linear</FONT>" in module_level  # path, class
    assert draw(torch_graph, modules=True).svg.count("model.2") >= 1


def test_a_module_call_is_named_as_pytorch_writes_it_not_with_its_parameters():
    # model.0(x), not model.0(x, …, …): the module holds its weight and bias.
    pytest.importorskip("torch")
    G = graph_of_script(TORCH_SCRIPTS / "sequential.py", quiet=True)
    view = closed_groups(G, modules=True)
    names = value_names(view)
    first = next(op for op, attrs in view.nodes(data=True) if attrs.get("symbol") == "model.0")
    assert names[result_of(view, first)].text == "model.0(X)"
    linear = next(op for op, attrs in G.nodes(data=True) if attrs.get("op") == "linear")
    assert value_names(G)[result_of(G, linear)].text == "linear(X)"
    assert "(<I>X</I>, …" not in to_dot(view)


SHARED_BLOCK = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, x):
        return self.scale * torch.tanh(self.lin(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(self.block(x))


torch.manual_seed(0)
model = Net()
x = torch.tensor([[1.0, -1.0]])
loss = model(x).sum()
loss.backward()
"""


def test_a_module_called_twice_is_named_without_the_parameters_of_modules_inside_it(tmp_path):
    # Called twice, the block holds no parameters (each is used by both calls): its own
    # scale and its linear layer's weight and bias are all left out of its call, as
    # PyTorch writes it (the linear layer's had been written in, the scale left out)
    pytest.importorskip("torch")
    script = tmp_path / "shared.py"
    script.write_text(SHARED_BLOCK)
    view = closed_groups(graph_of_script(script, quiet=True), modules=1)
    names = value_names(view)
    calls = sorted(names[result_of(view, op)].text for op, attrs in view.nodes(data=True)
                   if attrs.get("symbol") == "model.block")
    assert calls == ["model.block(model.block(x))", "model.block(x)"]


def test_a_group_entered_twice_is_two_operators():
    x, w = Value(0.5, label="x"), Value(-2.0, label="w")

    @group("neuron")
    def neuron(a, b):
        return (a * b).tanh()

    h1 = neuron(x, w)
    h1.label = "h1"
    h2 = neuron(h1, w)
    h2.label = "h2"
    h2.backward()
    view = closed_groups(to_networkx(h2))
    neurons = [op for op, attrs in view.nodes(data=True) if attrs.get("symbol") == "neuron"]
    assert len(neurons) == 2
    assert [view.nodes[result_of(view, op)]["label"] for op in neurons] == ["h1", "h2"]
    # w's edge into each carries what that call sent it: by hand, d tanh(a·w)/dw = a (1 − tanh²)
    second = {view.nodes[u]["label"]: view.edges[u, v, k]["grad"]
              for u, v, k in operand_edges(view, neurons[1])}
    t1, t2 = np.tanh(-1.0), np.tanh(np.tanh(-1.0) * -2.0)
    assert second["w"] == pytest.approx(t1 * (1 - t2 ** 2))
    assert to_dot(to_networkx(h2), expand=True).count("subgraph cluster_group") == 2


def test_a_group_that_cannot_be_one_op_is_named_in_a_note_and_its_inner_group_closes():
    x = Value(0.5, label="x")
    with group("outer"):
        a = x * 3.0
        with group("inner"):
            b = a.tanh() * 2.0
    a.label, b.label = "a", "b"
    c = a + b
    c.backward()
    view = closed_groups(to_networkx(c))
    assert [attrs["symbol"] for _, attrs in view.nodes(data=True)
            if attrs.get("op") == "group"] == ["inner"]
    assert any("'outer' is drawn op by op" in note for note in view.graph["remarks"])


def test_expand_boxes_hold_what_was_made_inside_and_a_modules_own_parameters():
    a, b = Value(1.0, label="a"), Value(2.0, label="b")
    with group("prod"):
        k = Value(3.0, label="k")
        c = a * b * k
    c.backward()
    dot = to_dot(to_networkx(c), expand=True)
    box = dot[dot.index("subgraph cluster_group"):]
    inside = box[:box.index("\n  }")]
    assert '"v2"' in inside and '"v0"' not in inside and '"v1"' not in inside  # k in, a, b out
    torch_graph = graph_of_script(TORCH_SCRIPTS / "sequential.py", quiet=True)
    labels = {node: attrs.get("label") for node, attrs in torch_graph.nodes(data=True)}
    opened = to_dot(torch_graph, expand=True)
    first = opened[opened.index('label="model.0"') - 200:]
    first = first[:first.index("\n    }")]
    ids = {label: node for node, label in labels.items() if label}
    assert f'"{ids["model.0.weight"]}"' in first and f'"{ids["X"]}"' not in first


@pytest.mark.parametrize("name", ["d2l_figure", "d2l_objective", "mlp3", "d2l_mlp_scalar"])
def test_every_drawn_operator_agrees_with_its_drawn_operands(example, name):
    from backpropviz.check import disagreements

    G = example(name)
    for kind, view in (("groups", closed_groups(G)), ("compact", compact(closed_groups(G)))):
        grouped = [op for op, attrs in view.nodes(data=True) if attrs.get("op") == "group"]
        # the book's figure has groups of its own; every compact view has some
        assert bool(grouped) == (kind == "compact" or name == "d2l_figure")
        assert disagreements(view, ir=G) == []
        for op in grouped:  # a group's result is checked by running its ops: it can fail
            tampered = view.copy()
            result = result_of(tampered, op)
            tampered.nodes[result]["data"] = (np.asarray(tampered.nodes[result]["data"])
                                              + 1.0).tolist()
            assert any(found.startswith(f"{op} (group)")
                       for found in disagreements(tampered, ir=G)), op
