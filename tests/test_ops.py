"""The op registry: one home per op, complete for the engine, read by every view."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from backpropviz import Tensor, Value, draw, gradcheck, ops
from backpropviz.captions import step_captions
from backpropviz.engine import _TENSOR_RULES, _VALUE_RULES
from backpropviz.foreign import TAGS
from backpropviz.ir import to_networkx
from backpropviz.torch_record import TORCH_FUNCTIONS, TORCH_NODES

PACKAGE = Path(__file__).resolve().parent.parent / "backpropviz"
ENGINE = {"engine.py", "value.py", "tensor.py"}  # the engine's modules: ops by name, with rules


def string_constants(path: Path) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def test_no_op_is_named_outside_the_engine_and_the_registry():
    constants = {path.relative_to(PACKAGE).as_posix(): string_constants(path)
                 for path in PACKAGE.rglob("*.py")}
    # PyTorch's names for the ops (the ones that are not also an op's own name), kept by
    # its producer; the producers map their frameworks' names to the registry's.
    torch_names = {*TORCH_NODES, *TORCH_FUNCTIONS} - set(ops.names())
    for name in ops.names():
        modules = sorted(module for module, strings in constants.items() if name in strings)
        assert set(modules) <= {*ENGINE, "ops.py", "torch_record.py", "foreign.py"}, \
            (name, modules)
    for name in torch_names:
        modules = sorted(module for module, strings in constants.items() if name in strings)
        # (ops.py has words such as "multiply" as its verbs: "cannot multiply shapes")
        assert "torch_record.py" in modules and set(modules) <= {"torch_record.py", "ops.py"}, \
            (name, modules)
    assert set(TORCH_NODES.values()) | set(TAGS) <= set(ops.names())


def test_every_engine_op_has_a_record_and_every_record_an_engine_rule():
    assert set(ops.names()) == set(_VALUE_RULES) | set(_TENSOR_RULES)
    for name in ops.names():
        op = ops.get(name)
        assert op.forms, name
        for arity, form in op.forms.items():
            if arity == ops.ANY:  # one derivative, for every operand of a chain
                assert len(form.derivatives) == 1, name
                continue
            assert len(form.derivatives) == arity, name
            assert all((isinstance(where, int) and where < arity) or where == "out"
                       for where in form.saved), name


def test_an_unknown_op_is_drawn_and_explained_by_its_name():
    op = ops.get("softmax")
    assert op.symbol_for() == "softmax" and op.gate is None and not op.commutative
    x = Tensor([1.0, 2.0], label="x")
    y = x.exp()
    y.label = "y"
    L = y.sum()
    L.backward()
    G = to_networkx(L)
    exp = next(node for node, name in G.nodes(data="op") if name == "exp")
    G.nodes[exp].update(op="softmax", symbol="softmax")
    captions = [caption.text for caption in step_captions(G)]
    assert captions[2] == "∂L/∂x = ∂y/∂x · ∂L/∂y"
    assert "softmax" in draw(G).source


def test_sqrt_is_added_in_the_engine_and_the_registry_alone():
    # d√a/da = 1/(2√a): at a = 4, 1/4; three times that through L = 3√a.
    a = Value(4.0, label="a")
    r = a.sqrt()
    r.label = "r"
    L = r * 3.0
    L.label = "L"
    L.backward()
    assert (r.data, a.grad) == (2.0, 0.75)
    assert gradcheck(lambda t: (t.sqrt() * t).sum(), [Tensor([1.0, 4.0, 9.0])]).max_rel_error \
        < 1e-6
    assert Value(0.0).sqrt().data == 0.0
    assert math.isnan(Value(-1.0).sqrt().data)  # as IEEE (and torch) have it
    G = to_networkx(L)
    assert "√" in draw(G).source
    captions = step_captions(G)
    assert captions[2].text == "∂L/∂a = ∂L/∂r / (2 r)"
    assert captions[2].rule == "square root divides the gradient by twice its result"
    stored = {G.nodes[v]["label"] for v, kind in G.nodes(data="kind")
              if kind == "value" and G.nodes[v]["stored"]}
    assert "r" in stored  # the rule reads √a, the result


def test_sqrt_from_pytorch_is_the_registrys_op():
    torch = pytest.importorskip("torch")
    from backpropviz import capture, from_torch

    with capture() as recording:
        x = torch.tensor([4.0, 9.0], requires_grad=True)
        L = torch.sqrt(x).sum()
        L.backward()
    G = from_torch(L, names={"x": x, "L": L}, recording=recording)
    (root,) = [node for node, name in G.nodes(data="op") if name == "sqrt"]
    assert G.nodes[root]["symbol"] == "√"
    x_id = next(node for node, label in G.nodes(data="label") if label == "x")
    np.testing.assert_allclose(G.nodes[x_id]["grad"], [0.25, 1 / 6])
