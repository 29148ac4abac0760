"""The PyTorch importer: torch scripts become the IR, with torch's own values and gradients."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backpropviz.ir import to_networkx, validate
from backpropviz.script import run_script
from backpropviz.steps import backward_steps

torch = pytest.importorskip("torch")

from backpropviz.torch_import import (  # noqa: E402 (after the importorskip)
    TorchImportError,
    capture,
    from_torch,
    is_torch_tensor,
)
from tests.in_process import run_cli  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "torch_scripts"


def run_captured(path: Path) -> tuple[dict, object]:
    with capture() as recording, contextlib.redirect_stdout(io.StringIO()):
        namespace = run_script(path)
    return namespace, recording


def by_label(G) -> dict:
    return {attrs["label"]: attrs for _, attrs in G.nodes(data=True)
            if attrs["kind"] == "value" and attrs["label"]}


@pytest.fixture(scope="module")
def seed_graph():
    namespace, recording = run_captured(ROOT / "examples" / "torch_mlp.py")
    return from_torch(namespace["L"], names=namespace, recording=recording)


# ---------------------------------------------------------------- the seed


def test_seed_script_has_the_books_numbers(seed_graph):
    validate(seed_graph)
    values = by_label(seed_graph)
    assert set(values) == {"x", "W1", "W2", "z", "h", "o", "L"}
    assert values["L"]["data"] == 2.0 and values["L"]["role"] == "output"
    assert values["W2"]["grad"] == [[0.0, -4.0]]  # -0.0 == 0.0: the signed zero is fine
    assert values["h"]["grad"] == [-4.0, 2.0]
    assert values["z"]["grad"] == [0.0, 2.0]
    assert values["W1"]["grad"] == [[0.0, 0.0], [2.0, 4.0]]
    assert values["z"]["data"] == [-1.0, 2.0] and values["h"]["data"] == [0.0, 2.0]
    assert [values[n]["role"] for n in ("x", "W1", "z")] == ["input", "param", "intermediate"]
    relu = next(a for _, a in seed_graph.nodes(data=True) if a.get("op") == "relu")
    assert relu["dead"] == [True, False]


def test_seed_script_matches_the_engines_graph_of_d2l_mlp(example_names, seed_graph):
    namespace = example_names("d2l_mlp")
    E, T = to_networkx(namespace["L"], names=namespace), seed_graph
    assert list(E.nodes) == list(T.nodes)
    assert sorted(E.edges(keys=True)) == sorted(T.edges(keys=True))
    for node, e in E.nodes(data=True):
        t = T.nodes[node]
        for key in ("kind", "op", "symbol", "exponent", "dead", "label", "data", "shape", "role"):
            assert t.get(key) == e.get(key), (node, key)
        if e["kind"] == "value":
            # torch computes no gradient for x (no requires_grad) nor for the
            # numbers 0 and 2; everything it does compute equals the engine's.
            expected = None if e["role"] in ("input", "const") else e["grad"]
            assert t["grad"] == expected, node
    for u, v, k, e in E.edges(keys=True, data=True):
        t = T.edges[u, v, k]
        operand = E.nodes[u]
        if operand["kind"] == "value" and operand["role"] not in ("input", "const"):
            assert t["grad"] == e["grad"], (u, v)
    for key in ("roots", "backward_order", "seeds"):
        assert T.graph[key] == E.graph[key], key


def test_seed_stored_values_are_what_autograd_saved(seed_graph):
    values = by_label(seed_graph)
    # ReluBackward0 keeps its result h, MvBackward0 keeps x for dL/dW1 (W1
    # only if x needed a gradient); each float32 costs 4 bytes.
    assert values["h"]["stored"] and values["h"]["nbytes"] == 8
    assert values["x"]["stored"] and not values["W1"]["stored"] and not values["z"]["stored"]
    assert seed_graph.graph["stored_bytes"] == sum(
        a["nbytes"] for _, a in seed_graph.nodes(data=True) if a["kind"] == "value")


def test_backward_steps_replay_to_torchs_gradients(seed_graph):
    final = backward_steps(seed_graph)[-1].grads
    for node, attrs in seed_graph.nodes(data=True):
        if attrs["kind"] == "value" and attrs["grad"] is not None:
            np.testing.assert_array_equal(final[node], attrs["grad"])


# ---------------------------------------------------------------- edge cases


def test_a_value_used_twice_keeps_both_edges():
    with capture() as recording:
        a = torch.tensor(3.0, requires_grad=True)
        b = a * a
        b.backward()
    G = from_torch(b, names={"a": a, "b": b}, recording=recording)
    edges = sorted((k, d["grad"]) for u, _, k, d in G.edges(keys=True, data=True) if u == "v0")
    assert edges == [(0, 3.0), (1, 3.0)]
    assert by_label(G)["a"]["grad"] == a.grad.item() == 6.0


def test_each_edge_carries_its_own_contribution():
    with capture() as recording:
        a = torch.tensor([2.0, 3.0], requires_grad=True)
        b = torch.tensor([5.0, 7.0], requires_grad=True)
        L = (a - a + a * b).sum()
        L.backward()
    G = from_torch(L, names={"a": a, "b": b}, recording=recording)
    sent = {(G.nodes[u]["label"], G.nodes[v]["op"], k): d["grad"]
            for u, v, k, d in G.edges(keys=True, data=True) if "arg" in d}
    assert sent[("a", "sub", 0)] == [1.0, 1.0] and sent[("a", "sub", 1)] == [-1.0, -1.0]
    assert sent[("a", "mul", 0)] == b.tolist() and sent[("b", "mul", 1)] == a.tolist()
    assert by_label(G)["a"]["grad"] == a.grad.tolist() == b.tolist()


def test_reflected_operators_draw_the_math_order():
    with capture() as recording:
        x = torch.tensor([1.0, 3.0], requires_grad=True)
        L = (2 - x).sum()
        L.backward()
    G = from_torch(L, names={"x": x}, recording=recording)
    sub = next(n for n, a in G.nodes(data=True) if a.get("op") == "sub")
    operands = {k: G.nodes[u] for u, _, k in G.in_edges(sub, keys=True)}
    assert operands[0]["role"] == "const" and operands[0]["data"] == 2.0
    assert operands[1]["label"] == "x"
    assert by_label(G)["x"]["grad"] == [-1.0, -1.0]


def test_composite_function_is_one_op_with_its_tensor_arguments():
    with capture() as recording:
        x = torch.tensor([1.0, 2.0])
        W = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        b = torch.tensor([0.5, -0.5], requires_grad=True)
        L = torch.nn.functional.linear(x, W, b).sum()
        L.backward()
    G = from_torch(L, names={"x": x, "W": W, "b": b, "L": L}, recording=recording)
    validate(G)
    ops = [a["op"] for _, a in G.nodes(data=True) if a["kind"] == "op"]
    assert ops == ["linear", "sum"]
    values = by_label(G)
    assert values["W"]["grad"] == W.grad.tolist() and values["b"]["grad"] == b.grad.tolist()


def test_in_place_relu_draws_the_value_before_and_after():
    namespace, recording = run_captured(SCRIPTS / "inplace_relu.py")
    G = from_torch(namespace["L"], names=namespace, recording=recording)
    relu = next(n for n, a in G.nodes(data=True) if a.get("op") == "relu")
    before = G.nodes[next(iter(G.predecessors(relu)))]
    after = G.nodes[next(iter(G.successors(relu)))]
    # The same tensor object held [-1, 2] and then [0, 2]: both are drawn.
    assert before["data"] == [-1.0, 2.0] and before["grad"] == [0.0, 2.0]
    assert after["label"] == "h" and after["data"] == [0.0, 2.0] and after["grad"] == [-4.0, 2.0]
    assert by_label(G)["W1"]["grad"] == [[0.0, 0.0], [2.0, 4.0]]


def test_assignment_into_a_tensor_draws_it_before_and_after():
    with capture() as recording:
        W = torch.tensor([1.0, 2.0], requires_grad=True)
        h = W * 3
        h[0] = 0  # __setitem__ returns None: the change is found on its argument
        L = (h * h).sum()
        L.backward()
    G = from_torch(L, names={"W": W, "h": h}, recording=recording)
    setitem = next(n for n, a in G.nodes(data=True) if a.get("op") == "setitem")
    before = G.nodes[next(iter(G.predecessors(setitem)))]
    assert before["data"] == [3.0, 6.0] and by_label(G)["h"]["data"] == [0.0, 6.0]
    assert by_label(G)["W"]["grad"] == W.grad.tolist() == [0.0, 36.0]


def test_a_view_whose_base_changed_is_refused():
    with capture() as recording:
        W = torch.tensor([1.0, 2.0], requires_grad=True)
        h = W * 3
        v = h[0]
        h.mul_(2)  # v now reads 6, through a history autograd rebuilt
        L = v * 1
        L.backward()
    with pytest.raises(TorchImportError, match="'v' has an autograd history no recorded call made"):
        from_torch(L, names={"v": v}, recording=recording)


def test_a_change_autograd_did_not_see_is_refused():
    namespace, recording = run_captured(SCRIPTS / "changed_under_no_grad.py")
    with pytest.raises(TorchImportError, match="'h' was changed in place"):
        from_torch(namespace["L"], names=namespace, recording=recording)


def test_a_later_result_of_a_fused_function_is_refused():
    with capture() as recording:
        torch.manual_seed(0)
        attention = torch.nn.MultiheadAttention(2, 1)
        x = torch.randn(3, 1, 2)
        out, weights = attention(x, x, x)  # two results, from different autograd nodes
        L = out.sum() + weights.sum()
        L.backward()
    with pytest.raises(TorchImportError, match=r"first result alone \(this one uses result 2\)"):
        from_torch(L, recording=recording)


def test_tensor_without_grad_fn_is_refused():
    with capture() as recording:
        z = torch.tensor([[1.0, 2.0]]) @ torch.tensor([1.0, 1.0])
    with pytest.raises(TorchImportError, match="'z' of shape \\(1,\\) has no grad_fn"):
        from_torch(z, names={"z": z}, recording=recording)


def test_vector_output_without_backward_has_values_and_no_gradients():
    namespace, recording = run_captured(SCRIPTS / "vector_output.py")
    G = from_torch(namespace["z"], names=namespace, recording=recording)
    validate(G)
    assert by_label(G)["z"]["data"] == [-1.0, 2.0]
    assert all(a["grad"] is None for _, a in G.nodes(data=True) if a["kind"] == "value")
    assert G.graph["backward_order"] == [] and G.graph["seeds"] == {}


def test_backward_after_the_block_is_recorded_and_passes_add_up():
    with capture() as recording:
        W = torch.tensor([1.0, -2.0], requires_grad=True)
        L = (W * W).sum()
    L.backward(retain_graph=True)
    L.backward()
    G = from_torch(L, names={"W": W, "L": L}, recording=recording)
    assert by_label(G)["W"]["grad"] == W.grad.tolist() == [4.0, -8.0]
    assert by_label(G)["L"]["grad"] == 2.0 and G.graph["seeds"] == {"v2": 2.0}


def test_the_last_capture_is_the_default_recording():
    with capture():
        W = torch.tensor([1.0, -2.0], requires_grad=True)
        L = (W * W).sum()
        L.backward()
    assert by_label(from_torch(L, names={"W": W}))["W"]["grad"] == [2.0, -4.0]


def test_tensors_from_outside_capture_are_refused():
    W = torch.tensor([1.0, -2.0], requires_grad=True)
    h = W * 3
    with capture() as recording:
        L = h.sum()
    with pytest.raises(TorchImportError, match="capture"):
        from_torch(L, recording=recording)


def test_network_parameters_are_named_after_the_module():
    with capture() as recording:
        torch.manual_seed(0)
        net = torch.nn.Linear(2, 1)
        L = net(torch.tensor([1.0, 2.0])).sum()
        L.backward()
    values = by_label(from_torch(L, names={"net": net}, recording=recording))
    assert values["net.weight"]["grad"] == net.weight.grad.tolist()
    assert values["net.bias"]["grad"] == net.bias.grad.tolist()


def test_is_torch_tensor():
    assert is_torch_tensor(torch.zeros(1)) and not is_torch_tensor([0.0])


def test_missing_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails
    with pytest.raises(TorchImportError, match=r"pip install 'backpropviz\[torch\]'"), capture():
        pass


def test_importing_backpropviz_never_imports_torch():
    code = ("import sys, backpropviz, backpropviz.torch_import as t; "
            "assert not t.is_torch_tensor(0); assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- random programs


UNARY = {
    "relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "neg": torch.neg,
    "square": lambda t: t ** 2, "exp_tanh": lambda t: torch.exp(torch.tanh(t)),
    "scale": lambda t: 1.5 * t, "shift": lambda t: t - 0.5, "rsub": lambda t: 2 - t,
    "halve": lambda t: t / 2, "relu_inplace": lambda t: (t * 1).relu_(),
}
BINARY = {
    "add": torch.add, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1), "matmul": lambda a, b: M @ a + b,
}
M = torch.tensor([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5], [0.25, 1.5, -1.0]])

step = st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY)), st.integers(0, 99)),
    st.tuples(st.sampled_from(["binary"]), st.sampled_from(sorted(BINARY)),
              st.integers(0, 99), st.integers(0, 99)),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(leaves=st.lists(st.tuples(st.lists(st.integers(-3, 3), min_size=3, max_size=3),
                                 st.booleans()), min_size=1, max_size=3),
       steps=st.lists(step, min_size=1, max_size=7), uses=st.integers(1, 3))
def test_random_programs_give_torchs_gradients(leaves, steps, uses):
    with capture() as recording:
        pool = [torch.tensor([v / 2 for v in values], requires_grad=grad)
                for values, grad in leaves]
        pool[0].requires_grad_(True)  # at least one leaf needs a gradient
        for kind, name, *picks in steps:
            operands = [pool[i % len(pool)] for i in picks]
            result = (UNARY if kind == "unary" else BINARY)[name](*operands)
            if result.requires_grad:
                result.retain_grad()
            pool.append(result)
        L = sum(t.sum() for t in [pool[0], *pool[-uses:]])
        L.backward(retain_graph=True)
    names = {f"t{i}": t for i, t in enumerate(pool)}
    G = from_torch(L, names=names, recording=recording)
    validate(G)
    final = backward_steps(G)[-1].grads if G.graph["backward_order"] else {}
    for node, attrs in G.nodes(data=True):
        if attrs["kind"] != "value" or attrs["label"] is None:
            continue
        tensor = names[attrs["label"]]
        assert attrs["data"] == tensor.detach().tolist()
        expected = tensor.grad
        if expected is None:
            assert attrs["grad"] is None or not tensor.requires_grad, attrs["label"]
            continue
        np.testing.assert_allclose(attrs["grad"], expected.tolist(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(final[node], expected.tolist(), rtol=1e-6, atol=1e-6)
    check_edges(G, names)


def check_edges(G, names: dict) -> None:
    """Each edge carries what torch gives as the derivative along that edge alone.

    Where the only way from operand u to result r is the op's own edge(s),
    torch.autograd.grad(r, u, r.grad) is the sum of those edges' contributions.
    """
    # A retained .grad grows with every autograd.grad call through it: read them first.
    upstream = {name: t.grad.clone() for name, t in names.items() if t.grad is not None}
    for op, attrs in G.nodes(data=True):
        result = next(iter(G.successors(op)), None)
        if attrs["kind"] != "op" or G.nodes[result]["label"] not in upstream:
            continue
        r = names[G.nodes[result]["label"]]
        for u in set(G.predecessors(op)):
            label = G.nodes[u]["label"]
            edges = [d["grad"] for _, v, d in G.out_edges(u, data=True) if v == op]
            paths = sum(1 for _ in nx.all_simple_edge_paths(G, u, result))
            if label is None or not names[label].requires_grad or paths != len(edges):
                continue
            (expected,) = torch.autograd.grad(r, names[label], upstream[G.nodes[result]["label"]],
                                              retain_graph=True)
            np.testing.assert_allclose(np.sum(edges, axis=0), expected.tolist(),
                                       rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- the command line


def render(*args: str) -> subprocess.CompletedProcess:
    """``backpropviz render ARGS`` in this process (tests/in_process.py), from the checkout."""
    return run_cli("render", *args, cwd=ROOT, text=True)


def svg_numbers(path: Path) -> Counter:
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text())
    return Counter(t for t in texts if re.fullmatch(r"[−-]?\d+(\.\d+)?", t))


def test_cli_draws_the_seed_script_with_the_engines_numbers(tmp_path):
    drawn = {}
    for name, script in (("torch", "examples/torch_mlp.py"), ("engine", "examples/d2l_mlp.py")):
        drawn[name] = tmp_path / f"{name}.svg"
        done = render(script, "-o", str(drawn[name]))
        assert done.returncode == 0, done.stderr
    torch_numbers, engine_numbers = svg_numbers(drawn["torch"]), svg_numbers(drawn["engine"])
    assert torch_numbers["−4"] == 2  # dL/dW2 and dL/dh
    # Every number in the torch picture is in the engine's picture; the
    # engine's has two more, the gradient torch does not compute: dL/dx =
    # [0, 2] (the engine's gradients of the constants y = 0 and 2 are not drawn).
    assert torch_numbers - engine_numbers == Counter()
    assert engine_numbers - torch_numbers == Counter({"2": 1, "0": 1})


def test_cli_json_has_the_engines_numbers(example_names, tmp_path, seed_graph):
    out = tmp_path / "out.json"
    done = render("examples/torch_mlp.py", "-o", str(out))
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    namespace = example_names("d2l_mlp")
    engine = to_networkx(namespace["L"], names=namespace)
    drawn = {node["id"]: node for node in data["nodes"]}
    for node, attrs in engine.nodes(data=True):
        if attrs["kind"] == "value":
            assert drawn[node]["data"] == attrs["data"], node
            if attrs["role"] not in ("input", "const"):
                assert drawn[node]["grad"] == attrs["grad"], node


def test_cli_without_torch_says_which_extra_to_install(tmp_path):
    out = tmp_path / "out.svg"
    block = ("import sys; sys.modules['torch'] = None; "
             "from backpropviz.cli import main; sys.exit(main())")
    done = subprocess.run(
        [sys.executable, "-c", block, "render", "examples/torch_mlp.py", "-o", str(out)],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ})
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'backpropviz[torch]'" in lines[0], done.stderr
    assert not out.exists()


def test_the_t_property_is_a_transpose_headed_as_the_book_writes_it(tmp_path):
    """``k.T`` (a property, not a call) is the registry's transpose: kᵀ in the
    headings, and its caption sends back the gradient transposed, with autograd's k.grad."""
    from backpropviz.captions import step_captions
    from backpropviz.names import value_names
    from backpropviz.script import graph_of_script
    from backpropviz.views import drawn_graph

    script = tmp_path / "scores.py"
    script.write_text("import torch\ntorch.manual_seed(3)\n"
                      "q = torch.randn(2, 3, requires_grad=True)\n"
                      "k = torch.randn(2, 3, requires_grad=True)\n"
                      "scores = q @ k.T\nloss = (scores * scores).sum()\nloss.backward()\n")
    G = drawn_graph(graph_of_script(script, quiet=True))
    names = {name.text for name in value_names(G).values()}
    assert "kᵀ" in names and not any("T(" in name for name in names)
    lines = [line for caption in step_captions(G) for line in caption.worked]
    assert any(line.startswith("∂loss/∂k = (∂loss/∂(kᵀ))ᵀ = ") for line in lines)
    namespace = run_script(script)
    (k,) = [node for node, label in G.nodes(data="label") if label == "k"]
    assert np.allclose(G.nodes[k]["grad"], namespace["k"].grad.numpy())


def test_a_row_of_a_named_input_is_named_as_the_script_indexed_it(tmp_path):
    """xs[t] in a loop (a view of xs, which needs no gradient): each row is headed xs[0],
    xs[1]... with its numbers, not by an IR id; another view of xs is xs[…]."""
    from backpropviz.names import value_names
    from backpropviz.script import graph_of_script

    script = tmp_path / "rows.py"
    script.write_text("import torch\ntorch.manual_seed(0)\n"
                      "W = torch.randn(2, 2, requires_grad=True)\nxs = torch.randn(3, 2)\n"
                      "h = torch.zeros(2)\nfor t in range(3):\n    h = torch.tanh(xs[t] @ W + h)\n"
                      "loss = (h * xs[:2, 0]).sum()\nloss.backward()\n")
    G = graph_of_script(script, quiet=True)
    namespace = run_script(script)
    rows = {label: node for node, label in G.nodes(data="label")
            if label and label.startswith("xs[")}
    assert set(rows) == {"xs[0]", "xs[1]", "xs[2]", "xs[…]"}
    for t in range(3):
        assert np.allclose(G.nodes[rows[f"xs[{t}]"]]["data"], namespace["xs"][t].numpy())
    assert not [name.text for name in value_names(G).values() if re.search(r"\bv\d+", name.text)]


def test_a_dead_unit_zeros_its_row_of_a_linear_layers_weight(tmp_path):
    """nn.Linear records one op (linear): the rows of its weight and entries of its bias
    that a ReLU zeroed for every row of the batch are marked dead, the others not."""
    from backpropviz.script import graph_of_script
    from backpropviz.steps import dead_masks

    script = tmp_path / "seq.py"
    script.write_text(
        "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
        "model = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))\n"
        "with torch.no_grad():\n"
        "    model[0].weight.copy_(torch.tensor([[1., -1.], [-2., -1.], [.5, .5], [1., -2.]]))\n"
        "    model[0].bias.zero_()\n"
        "x = torch.tensor([[1., 2.], [3., 1.]])\n"
        "z = model[0](x)\nloss = ((model(x) - 1) ** 2).mean()\nloss.backward()\n")
    namespace = run_script(script)
    G = graph_of_script(script, quiet=True)
    values, _ = dead_masks(G)
    weight, bias = (next(node for node, label in G.nodes(data="label") if label == name)
                    for name in ("model.0.weight", "model.0.bias"))
    # The reference: a unit is dead for the batch where its input is <= 0 in every row.
    dead_units = (namespace["z"] <= 0).all(dim=0).numpy()
    assert dead_units.tolist() == [False, True, False, False]  # unit 3 is dead in one row only
    grad = namespace["model"][0].weight.grad.numpy()
    assert np.all(grad[dead_units] == 0) and np.all(grad[~dead_units].any(axis=1))
    assert values[weight].tolist() == np.repeat(dead_units[:, None], 2, axis=1).tolist()
    assert values[bias].tolist() == dead_units.tolist()


def test_building_the_ir_gives_torch_its_number_of_threads_back():
    # The IR is built on one thread (its passes over the numbers are bound by memory),
    # and the script's own number of threads is torch's again afterwards, error or not.
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with capture() as recording:
            w = torch.tensor([2.0, -1.0], requires_grad=True)
            loss = (w * w).sum()
            loss.backward()
        G = from_torch(loss, names={"w": w}, recording=recording)
        assert torch.get_num_threads() == 2
        assert by_label(G)["w"]["grad"] == [4.0, -2.0]
        with pytest.raises(TorchImportError):
            from_torch(torch.tensor(1.0), recording=recording)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_reductions_axes_are_read_off_its_shapes_where_they_tell_them():
    # x.mean((2, 3)) of a 1×4×6×3 batch: axes 2 and 3, drawn mean₂,₃; kept (1×4×1×1) too;
    # a 2×2 summed to 2 could be either axis and is said to be none.
    def drawn(code: str) -> list:
        namespace: dict = {}
        with capture() as recording:
            exec(code, {"torch": torch}, namespace)  # (a script of the test's own)
        G = from_torch(namespace["loss"], names=namespace, recording=recording)
        validate(G)
        return [(attrs.get("axis"), attrs.get("keepdims", False), attrs["symbol"])
                for _, attrs in G.nodes(data=True) if attrs.get("op") in ("sum", "mean")]

    prefix = "torch.manual_seed(0)\nz = torch.randn(1, 4, 6, 3, requires_grad=True)\n"
    assert drawn(prefix + "loss = (z.mean((2, 3)) * torch.arange(4.0)).sum()\n"
                 "loss.backward()\n") == [((2, 3), False, "mean₂,₃"), (None, False, "Σ")]
    assert drawn(prefix + "loss = (z.mean((2, 3), keepdim=True) ** 2).sum()\n"
                 "loss.backward()\n")[0] == ((2, 3), True, "mean₂,₃")
    assert drawn("w = torch.ones(2, 2, requires_grad=True)\n"
                 "loss = (w.sum(0) * torch.tensor([1.0, 2.0])).sum()\nloss.backward()\n") == [
        (None, False, "Σ"), (None, False, "Σ")]
