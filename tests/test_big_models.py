"""Big models at the level a lecture shows them: a ResNet's modules, N levels down.

A small ResNet (torch_scripts/resnet_small.py: the stem, two stages of two
BasicBlocks, the classifier) is drawn with ``--depth N``; its structure is
checked against the model's ``named_modules``, and the numbers drawn at a
module operator against plain PyTorch's run of the same script.
"""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from backpropviz import cli  # noqa: E402
from backpropviz.captions import step_captions  # noqa: E402
from backpropviz.figure import to_dot  # noqa: E402
from backpropviz.formatting import SUMMARY_ENTRIES, display_number  # noqa: E402
from backpropviz.ir import LIST_ENTRIES, from_node_link, result_of, to_node_link  # noqa: E402
from backpropviz.schema import validate  # noqa: E402
from backpropviz.script import graph_of_script  # noqa: E402
from backpropviz.views import closed_groups, drawn_graph, group_path  # noqa: E402
from tests.in_process import run_cli  # noqa: E402

SCRIPTS = Path(__file__).resolve().parent / "torch_scripts"
RESNET = SCRIPTS / "resnet_small.py"


@pytest.fixture(scope="module")
def graph():
    return graph_of_script(RESNET, quiet=True)


@pytest.fixture(scope="module")
def reference():
    """Plain PyTorch's run of the script: its names, and each module call's input and
    output (their values then, and the output tensor, which keeps its gradient)."""
    from torch.nn.modules import module as modules

    calls: list[tuple[object, object, object, object]] = []

    def hook(module, args, output):
        output.retain_grad()
        calls.append((module, args[0].detach().clone(), output.detach().clone(), output))

    handle = modules.register_module_forward_hook(hook)
    try:
        namespace = runpy.run_path(str(RESNET), run_name="__main__")
    finally:
        handle.remove()
    names = {id(module): f"model.{name}" if name else "model"
             for name, module in namespace["model"].named_modules()}
    return namespace, {names[id(module)]: (x, y, tensor) for module, x, y, tensor in calls}


def _drawn_statement(dot: str, node: str) -> str:
    """The DOT statement that draws ``node`` (one line: its id and label)."""
    (line,) = [line for line in dot.splitlines() if line.startswith(f'  "{node}" [id=')]
    return line


def _norm_text(tensor) -> str:
    """How a large tensor's norm is written, from torch's own norm of it."""
    return f"‖·‖ {display_number(float(torch.linalg.vector_norm(tensor.detach().double())))}"


def _shape_text(tensor) -> str:
    return "×".join(map(str, tensor.shape))


def _module_ops(view) -> dict[str, str]:
    return {attrs["symbol"]: op for op, attrs in view.nodes(data=True)
            if attrs["kind"] == "op" and attrs["op"] == "group"}


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_depth_n_draws_the_modules_n_levels_down(graph, reference, depth):
    namespace, _ = reference
    # torchview's depth: the modules N levels below the model, and those above with no
    # modules inside (model.fc at any depth), each one operator
    expected = {f"model.{name}" for name, module in namespace["model"].named_modules()
                if name and (name.count(".") + 1 == depth
                             or (name.count(".") + 1 < depth and not list(module.children())))}
    view = closed_groups(graph, modules=depth)
    validate(view)
    drawn = _module_ops(view)
    # a module of one op and no parameters (nn.ReLU, a pooling) is drawn as that op
    by_name = {f"model.{name}": module for name, module in namespace["model"].named_modules()}
    lone = {name for name in expected if not list(by_name[name].parameters())
            and not list(by_name[name].children())}
    assert set(drawn) == expected - lone
    ops = [attrs for _, attrs in view.nodes(data=True) if attrs["kind"] == "op"]
    for name in lone:  # (each call of it: a block calls its ReLU twice)
        found = [attrs["op"] for attrs in ops if name in dict(group_path(attrs))]
        assert found and set(found) <= {"relu", "max_pool2d", "mean"}, found  # (the average)
    # Every other op drawn is one the model's forward runs between its modules (the
    # residual additions, the flatten), or the loss outside it: none inside a module
    # that is drawn as one.
    modules = set(graph.graph["module_groups"])
    for attrs in ops:
        if attrs["op"] != "group":
            inside = [name for name, _ in group_path(attrs) if name in modules]
            assert not set(inside) & (expected - lone), (attrs["op"], inside)
            assert len(inside) <= depth + bool(set(inside) & lone)
    assert not any("drawn op by op" in note for note in view.graph.get("remarks", ()))
    # a module operator holds its own buffers (batch norm's running statistics), and in
    # a model this size its parameters too: each parameter of the model is held by the
    # one drawn module it belongs to, under its name there, and is no box of its own
    labels = [attrs["label"] or "" for _, attrs in view.nodes(data=True)
              if attrs["kind"] == "value"]
    assert not [label for label in labels if "running_" in label or "model." in label]
    held = {}
    for op in drawn.values():
        attrs = view.nodes[op]
        assert len(attrs.get("parameters", ())) == len(attrs.get("parameter_names", ()))
        for value, name in zip(attrs.get("parameters", ()), attrs.get("parameter_names", ()),
                               strict=True):
            assert graph.nodes[value]["label"] == f"{attrs['symbol']}.{name}"
            held[graph.nodes[value]["label"]] = held.get(graph.nodes[value]["label"], 0) + 1
    assert held == {f"model.{name}": 1 for name, _ in namespace["model"].named_parameters()}


def test_the_statistics_batch_norm_only_updates_in_training_are_not_drawn(graph, reference):
    # In training, batch norm normalises with the batch's statistics and only updates its
    # running ones: they were drawn as its inputs, and a legend line said 20 tensors had
    # "changed after the forward pass used them". They are not inputs of what it computed.
    namespace, _ = reference
    assert namespace["model"].training
    buffers = {f"model.{name}" for name, _ in namespace["model"].named_buffers()
               if "running_" in name}
    assert buffers
    labels = {attrs.get("label") for _, attrs in graph.nodes(data=True)}
    assert not buffers & labels
    assert not [note for note in graph.graph.get("notes", []) if "changed after" in note]


def test_depth_is_the_command_lines_too(tmp_path):
    out = tmp_path / "resnet.dot"
    assert cli.main(["render", str(RESNET), "--depth", "1", "-o", str(out)]) == 0
    drawn = re.findall(r'label=<(?:<TABLE[^>]*><TR><TD>)?([\w.]+)<BR/>.*class="op group"',
                       out.read_text())
    # (nn.ReLU and the poolings are drawn as their one op)
    assert sorted(drawn) == ["model.bn1", "model.conv1", "model.fc", "model.layer1",
                             "model.layer2"]
    refused = run_cli("render", RESNET, "--depth", "0", "-o", tmp_path / "no.svg", text=True)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "--depth" in refused.stderr and not (tmp_path / "no.svg").exists()


@pytest.mark.parametrize(("depth", "module"), [(1, "model.layer1"), (1, "model.layer2"),
                                               (2, "model.layer1.0"), (2, "model.layer2.1")])
def test_a_module_ops_numbers_are_its_input_and_output_as_torch_has_them(
        graph, reference, depth, module):
    _, calls = reference
    x, y, output = calls[module]
    view = drawn_graph(graph, modules=depth)
    op = _module_ops(view)[module]
    result = result_of(view, op)
    (entering,) = [u for u in view.predecessors(op) if view.nodes[u]["role"] != "param"
                   and not (view.nodes[u]["label"] or "").startswith(module + ".")]
    # the IR holds torch's numbers whole
    np.testing.assert_array_equal(np.asarray(view.nodes[result]["data"]), y.numpy())
    np.testing.assert_array_equal(np.asarray(view.nodes[entering]["data"]), x.numpy())
    np.testing.assert_allclose(np.asarray(view.nodes[result]["grad"]), output.grad.numpy(),
                               rtol=1e-6, atol=1e-9)
    # and the picture writes each as its shape and norm, torch's norm at 4 digits
    assert y.numel() > SUMMARY_ENTRIES
    dot = to_dot(view)
    drawn = _drawn_statement(dot, result)
    for text in (_shape_text(y), _norm_text(y), _norm_text(output.grad)):
        assert f">{text}<" in drawn, text
    assert f">{_norm_text(x)}<" in _drawn_statement(dot, entering)


def _grad_norm_text(parameters) -> str:
    """The norm of parameters' gradients together, as a module operator writes it, from
    torch's own norms (what torch.nn.utils.clip_grad_norm_ reads)."""
    total = torch.linalg.vector_norm(torch.stack(
        [torch.linalg.vector_norm(p.grad.double()) for p in parameters]))
    return f"‖∇‖ {display_number(float(total))}"


@pytest.mark.parametrize("depth", [1, 2])
def test_the_parameters_a_module_holds_are_drawn_with_torchs_gradients(graph, reference, depth):
    namespace, _ = reference
    modules = dict(namespace["model"].named_modules())
    view = drawn_graph(graph, modules=depth)
    dot = to_dot(view)
    counted = named = 0
    for symbol, op in _module_ops(view).items():
        attrs = view.nodes[op]
        module = modules[symbol.removeprefix("model").lstrip(".")]
        parameters = dict(module.named_parameters())
        if not parameters:  # (a ReLU, a pooling: nothing to hold)
            assert "parameters" not in attrs
            continue
        assert sorted(attrs["parameter_names"]) == sorted(parameters)  # (in the order used)
        for name, grad in zip(attrs["parameter_names"], attrs["parameter_grads"], strict=True):
            np.testing.assert_allclose(np.asarray(grad), parameters[name].grad.numpy(),
                                       rtol=1e-6, atol=1e-9)
        drawn = _drawn_statement(dot, op)
        if len(parameters) > 2:  # counted, with the norm of all their gradients
            counted += 1
            assert f">{len(parameters)} parameter tensors<" in drawn
            assert f">{_grad_norm_text(parameters.values())}<" in drawn
        else:  # each by its name and shape, with its gradient's norm
            named += 1
            for name, parameter in parameters.items():
                assert f">{name} {_shape_text(parameter)}<" in drawn
                assert f">{_grad_norm_text([parameter])}<" in drawn
    assert counted and named  # (the BasicBlocks; the stem's convolution, the classifier)


def test_a_module_step_gives_its_parameters_gradients_as_torch_has_them(graph, reference):
    # the step of a module that holds its parameters says what they got (torch's norms),
    # and its operator shows the norm from that step on, blank before it
    namespace, _ = reference
    modules = dict(namespace["model"].named_modules())
    view = drawn_graph(graph, modules=1)
    captions = step_captions(view)
    said = 0
    for step, op in enumerate(view.graph["backward_order"], 1):
        attrs = view.nodes[op]
        module = modules.get(attrs["symbol"].removeprefix("model").lstrip("."))
        parameters = dict(module.named_parameters()) if attrs["op"] == "group" else {}
        lines = [line for line in captions[step].worked if "‖∂loss/∂" in line]
        if not parameters:
            assert not lines
            continue
        said += 1
        assert "the parameters drawn inside it get their gradients" in captions[step].rule
        if len(parameters) > 2:
            norm = _grad_norm_text(parameters.values()).removeprefix("‖∇‖ ")
            numbers = sum(p.numel() for p in parameters.values())  # (as torch counts them)
            assert lines == [f"{attrs['symbol']}'s {len(parameters)} parameter tensors, "
                             f"{numbers:,} numbers θ: ‖∂loss/∂θ‖ = {norm}"]
        else:
            assert lines == [f"‖∂loss/∂{attrs['symbol']}.{name}‖ = "
                             f"{_grad_norm_text([parameters[name]]).removeprefix('‖∇‖ ')}"
                             for name in attrs["parameter_names"]]
        norm = _grad_norm_text(parameters.values() if len(parameters) > 2 else
                               [parameters[attrs["parameter_names"][0]]])
        assert f">{norm}<" not in _drawn_statement(to_dot(view, step=step - 1), op)
        assert f">{norm}<" in _drawn_statement(to_dot(view, step=step), op)
    assert said == 5  # the stem's convolution and batch norm, two stages, the classifier


def test_a_module_holds_its_parameters_only_in_a_model_too_big_to_show_them():
    # nn.Sequential(Linear(2, 3), ReLU(), Linear(3, 1)): every weight fits its box, numbers
    # and all, so the modules do not hold them; a Linear(2, 8) could not show its 8 rows
    small = graph_of_script(SCRIPTS / "sequential.py", quiet=True)
    view = drawn_graph(small, modules=True)
    assert not any(attrs.get("parameters") for _, attrs in view.nodes(data=True))
    params = {attrs["label"] for _, attrs in view.nodes(data=True) if attrs.get("role") == "param"}
    assert params == {"model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"}
    view = drawn_graph(graph_of_script(SCRIPTS / "wide_sequential.py", quiet=True),
                       modules=True)
    assert not any(attrs.get("role") == "param" for _, attrs in view.nodes(data=True))
    held = [attrs["parameter_names"] for _, attrs in view.nodes(data=True)
            if attrs.get("parameters")]
    assert held == [["weight", "bias"], ["weight", "bias"]]


def test_large_numbers_stay_arrays_and_round_trip_as_lists(graph):
    big = [node for node, attrs in graph.nodes(data=True) if attrs["kind"] == "value"
           and np.prod(attrs["shape"], dtype=int) > LIST_ENTRIES]
    assert big and all(isinstance(graph.nodes[node]["data"], np.ndarray) for node in big)
    H = from_node_link(json.loads(json.dumps(to_node_link(graph))))
    validate(H)
    for node in big:
        np.testing.assert_array_equal(np.asarray(H.nodes[node]["data"], dtype=np.float32),
                                      graph.nodes[node]["data"])
        assert H.nodes[node]["shape"] == graph.nodes[node]["shape"]


@pytest.mark.parametrize("name", ["gru", "lstm"])
def test_an_rnn_drawn_at_module_level_is_seeded_at_its_loss_alone(tmp_path, name):
    # chunk's three results share one autograd node: its later results' shares count,
    # so no seed is made up inside the module (which --modules then hid)
    G = graph_of_script(SCRIPTS / f"{name}.py", quiet=True)
    loss = next(node for node, attrs in G.nodes(data=True) if attrs.get("label") == "loss")
    assert list(G.graph["seeds"]) == [loss]
    assert G.graph["seeds"][loss] == 1.0
    out = tmp_path / f"{name}.svg"
    assert cli.main(["render", str(SCRIPTS / f"{name}.py"), "--modules", "-o", str(out)]) == 0
    assert out.read_text().count('class="node op group') >= 1


def test_a_large_dead_mask_is_written_to_json_and_read_back(tmp_path):
    # A ReLU on 8×32×32 numbers keeps its dead units as an array, as large numbers are
    # kept: the JSON export writes it as lists (it raised a TypeError from json).
    script = tmp_path / "conv_relu.py"
    script.write_text("import torch\ntorch.manual_seed(0)\n"
                      "conv = torch.nn.Conv2d(3, 8, 3, padding=1)\n"
                      "x = torch.randn(1, 3, 32, 32)\n"
                      "loss = torch.relu(conv(x)).mean()\nloss.backward()\n")
    done = run_cli("render", str(script), "-o", "g.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    H = from_node_link((tmp_path / "g.json").read_text())
    (relu,) = [attrs for _, attrs in H.nodes(data=True) if attrs.get("op") == "relu"]
    namespace = runpy.run_path(str(script))
    expected = (namespace["conv"](namespace["x"]) <= 0).numpy()
    np.testing.assert_array_equal(np.asarray(relu["dead"]), expected)


def _modules_drawn_as_one(model, depth: int | None) -> set[str]:
    """The modules a view at ``depth`` (None: --modules, the innermost) draws as one
    operator each, from ``named_modules``: those N levels down, and those above with no
    modules inside; an empty Sequential (the identity shortcut) runs no op, and a module
    with neither parameters nor modules inside (nn.ReLU, a pooling: one op here) is
    drawn as its op."""
    return {f"model.{name}" for name, module in model.named_modules()
            if name and not (isinstance(module, torch.nn.Sequential) and not len(module))
            and (list(module.parameters()) or list(module.children()))
            and (name.count(".") + 1 == depth
                 or (not list(module.children())
                     and (depth is None or name.count(".") + 1 < depth)))}


@pytest.fixture(scope="module")
def residual_nets():
    """Each residual net's graph and its model, as plain PyTorch made it (run once)."""
    return {script: (graph_of_script(SCRIPTS / f"{script}.py", quiet=True),
                     runpy.run_path(str(SCRIPTS / f"{script}.py"))["model"])
            for script in ("resnet_small", "resnet_functional")}


@pytest.mark.parametrize("script", ["resnet_small", "resnet_functional"])
@pytest.mark.parametrize("depth", [None, 1, 2, 3])
def test_a_residual_blocks_own_ops_are_drawn_as_themselves_with_no_note(residual_nets, script,
                                                                        depth):
    # A block's own ops between its modules (the residual addition, a functional ReLU)
    # are not a module: at --modules they were closed into an operator named after the
    # block (the addition alone drawn as model.layer1.0), or, two of them, said to be
    # "drawn op by op: it makes more than one value used outside it" of a block that
    # returns one tensor.
    G, model = residual_nets[script]
    view = drawn_graph(G, modules=True if depth is None else depth)
    validate(view)
    assert set(_module_ops(view)) == _modules_drawn_as_one(model, depth)
    assert view.graph.get("remarks", []) == []
    own = [attrs["op"] for _, attrs in view.nodes(data=True)
           if attrs["kind"] == "op" and attrs["op"] != "group"]
    blocks = 2 if script == "resnet_functional" else 4
    if depth is None or depth > 2:  # the blocks open: each one's addition is drawn as +
        assert own.count("add") == blocks
    else:
        assert "add" not in own


TWO_RESULTS = """
import torch
from torch import nn


class Split(nn.Module):  # no module inside; two results, both used after it
    def forward(self, x):
        return torch.tanh(x), torch.sigmoid(x)


class Pair(nn.Module):  # modules inside, and two results used after it
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.split = Split()

    def forward(self, x):
        return self.split(self.linear(x))


torch.manual_seed(0)
model = nn.Sequential(Pair())
a, b = model(torch.randn(2, 3))
loss = (a * b).sum()
loss.backward()
"""


@pytest.mark.parametrize(("depth", "drawn_open"), [
    (None, ["model.0.split"]), (1, ["model.0", "model.0.split"]), (2, ["model.0.split"])])
def test_a_module_with_two_results_used_outside_is_said_to_be_drawn_op_by_op(
        tmp_path, depth, drawn_open):
    # (at depth 1 model.0 opens, and its module split, tried in its place, opens too)
    script = tmp_path / "two_results.py"
    script.write_text(TWO_RESULTS)
    view = drawn_graph(graph_of_script(script, quiet=True),
                       modules=True if depth is None else depth)
    assert view.graph["remarks"] == [
        f"the group {name!r} is drawn op by op: it makes more than one value that is "
        "used outside it, and an operator has one result" for name in drawn_open]
    assert sorted(_module_ops(view)) == ["model.0.linear"]
    assert {"tanh", "sigmoid"} <= {attrs["op"] for _, attrs in view.nodes(data=True)
                                   if attrs["kind"] == "op"}


def test_the_page_says_what_a_modules_operator_is_by_its_class():
    """The page's step label reads "model.0 (Linear)", not "model.0 (group)"."""
    from backpropviz.html import page_data

    view = drawn_graph(graph_of_script(SCRIPTS / "wide_sequential.py", quiet=True),
                       modules=True)
    said = sorted((op["symbol"], op["op"]) for op in page_data(view)["ops"].values())
    assert said == [("ReLU", "relu"), ("model.0", "Linear"), ("model.2", "Linear"),
                    ("mse_loss", "mse_loss")]  # (nn.ReLU drawn as its one op)


def test_an_nn_relu_is_drawn_as_a_relu_with_its_rule_and_its_dead_units():
    """nn.ReLU is one op of no parameters: a view of modules draws it as that op, so its
    step says the ReLU's rule and its dead units are marked, as F.relu's are; a group's
    operator had said "a group passes back …" and marked nothing."""
    from backpropviz import ops

    G = graph_of_script(SCRIPTS / "wide_sequential.py", quiet=True)
    view = drawn_graph(G, modules=True)
    (relu,) = [op for op, attrs in view.nodes(data=True) if attrs.get("op") == "relu"]
    assert "model.1" in dict(group_path(view.nodes[relu]))  # (nn.ReLU's own op)
    namespace = runpy.run_path(str(SCRIPTS / "wide_sequential.py"))
    hidden = namespace["model"][0](namespace["X"])
    np.testing.assert_array_equal(np.asarray(view.nodes[relu]["dead"]),
                                  (hidden <= 0).numpy())
    assert np.any(view.nodes[relu]["dead"])
    step = view.graph["backward_order"].index(relu) + 1
    rule = step_captions(view)[step].rule
    assert rule.startswith(ops.get("relu").rule) and ops.get("relu").gate_note in rule
    assert 'class="op relu dead"' in to_dot(view)
