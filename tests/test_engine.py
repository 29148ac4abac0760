"""The engine against the seed's numbers, finite differences, PyTorch and micrograd."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from backpropviz import Tensor, Value, engine, gradcheck
from backpropviz.engine import EngineError, saved_for_backward

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PROPERTY = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


def listed(array) -> list:
    return np.asarray(array).tolist()


# ---------------------------------------------------------------- the seed


def test_add_mul_example_gives_the_books_numbers(example_names, capsys):
    g = example_names("add_mul")
    assert g["d"].data == 3.0
    assert g["e"].data == -9.0
    assert (g["a"].grad, g["b"].grad, g["c"].grad) == (-3.0, -3.0, 3.0)
    assert g["d"].grad == -3.0  # de/dd = c
    assert "e = -9.0" in capsys.readouterr().out


def test_add_mul_in_tensor_form_gives_the_books_numbers():
    a, b, c = Tensor(2.0), Tensor(1.0), Tensor(-3.0)
    d = a + b
    e = d * c
    e.backward()
    assert (d.item(), e.item()) == (3.0, -9.0)
    assert (a.grad, b.grad, c.grad, d.grad) == (-3.0, -3.0, 3.0, -3.0)
    assert a.grad.shape == ()


def test_mlp_example_in_matrix_form_gives_the_books_numbers(example_names, capsys):
    g = example_names("d2l_mlp")
    assert listed(g["z"].data) == [-1.0, 2.0]
    assert listed(g["h"].data) == [0.0, 2.0]
    assert listed(g["o"].data) == [-2.0]
    assert g["L"].item() == 2.0
    assert listed(g["W2"].grad) == [[0.0, -4.0]]
    assert listed(g["h"].grad) == [-4.0, 2.0]
    assert listed(g["z"].grad) == [0.0, 2.0]
    assert listed(g["W1"].grad) == [[0.0, 0.0], [2.0, 4.0]]
    # PyTorch prints dL/dW2 = [[-0., -4.]]: h1 = 0 times a negative gradient.
    assert np.signbit(g["W2"].grad[0, 0])
    capsys.readouterr()


def test_mlp_example_in_scalar_form_gives_the_books_numbers(example_names, capsys):
    g = example_names("d2l_mlp_scalar")
    assert [g["z1"].data, g["z2"].data] == [-1.0, 2.0]
    assert [g["h1"].data, g["h2"].data] == [0.0, 2.0]
    assert g["o"].data == -2.0
    assert g["L"].data == 2.0
    assert [g["w2_1"].grad, g["w2_2"].grad] == [0.0, -4.0]
    assert [g["h1"].grad, g["h2"].grad] == [-4.0, 2.0]
    assert [g["z1"].grad, g["z2"].grad] == [0.0, 2.0]
    assert [[g["w1_11"].grad, g["w1_12"].grad],
            [g["w1_21"].grad, g["w1_22"].grad]] == [[0.0, 0.0], [2.0, 4.0]]
    capsys.readouterr()


def objective(lambd: float, x, y, W1, W2):
    """J = L + s for the seed's network: squared error plus lambda/2 (|W1|² + |W2|²)."""
    z = W1 @ x
    h = z.relu()
    o = W2 @ h
    L = ((o - y) ** 2).sum() / 2
    s = lambd / 2 * (W1.sqnorm() + W2.sqnorm())
    return z, h, o, L + s


def objective_numpy(lambd: float, x, y, W1, W2) -> float:
    o = W2 @ np.maximum(W1 @ x, 0.0)
    return float(((o - y) ** 2).sum() / 2 + lambd / 2 * ((W1 ** 2).sum() + (W2 ** 2).sum()))


def central_differences(function, array: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d function / d array, one entry at a time, in plain numpy."""
    grad = np.zeros_like(array)
    for i in np.ndindex(array.shape):
        up, down = array.copy(), array.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (function(up) - function(down)) / (2 * eps)
    return grad


def test_regularised_objective_sums_both_paths_into_w2():
    rng = np.random.default_rng(4)
    lambd = 0.3
    x_data, y = rng.normal(size=3), 0.5
    W1_data, W2_data = rng.normal(size=(4, 3)), rng.normal(size=(2, 4))
    x = Tensor(x_data)
    W1 = Tensor(W1_data, requires_grad=True)
    W2 = Tensor(W2_data, requires_grad=True)
    z, h, o, J = objective(lambd, x, y, W1, W2)
    J.backward()

    # dJ/dW2 = (dJ/do) hᵀ + lambda W2: the prediction path plus the penalty path.
    np.testing.assert_allclose(W2.grad, np.outer(o.grad, h.data) + lambd * W2_data, rtol=1e-12)
    np.testing.assert_allclose(W1.grad, np.outer(z.grad, x_data) + lambd * W1_data, rtol=1e-12)

    # An independent check: finite differences of the objective written in numpy.
    fd_W1 = central_differences(lambda W: objective_numpy(lambd, x_data, y, W, W2_data), W1_data)
    fd_W2 = central_differences(lambda W: objective_numpy(lambd, x_data, y, W1_data, W), W2_data)
    np.testing.assert_allclose(W1.grad, fd_W1, atol=1e-7)
    np.testing.assert_allclose(W2.grad, fd_W2, atol=1e-7)

    # And the library's own check.
    result = gradcheck(lambda W1, W2: objective(lambd, x, y, W1, W2)[-1], [W1, W2])
    assert result.max_abs_error < 1e-7


def test_objective_example_with_lambda(example_names, capsys):
    g = example_names("d2l_objective")
    lambd = g["lambd"]
    assert lambd != 0
    expected = np.outer(g["o"].grad, g["h"].data) + lambd * g["W2"].data
    np.testing.assert_allclose(g["W2"].grad, expected, rtol=1e-15)
    np.testing.assert_allclose(g["W2"].grad, [[0.2, -4.1]], rtol=1e-15)
    assert g["J"].item() == pytest.approx(2.4, rel=1e-15)
    capsys.readouterr()


# ---------------------------------------------------------------- random graphs

# Each op works on engine nodes and on torch tensors alike. Logs, roots and
# divisions get an argument kept away from zero, so finite differences hold.
VALUE_UNARY = {
    "neg": lambda x: -x,
    "relu": lambda x: x.relu(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "exp": lambda x: x.tanh().exp(),
    "log": lambda x: (x * x + 1.0).log(),
    "square": lambda x: x ** 2,
    "cube": lambda x: x ** 3,
    "sqrt": lambda x: (x * x + 1.0) ** 0.5,
    "reciprocal": lambda x: 1.0 / (x * x + 1.0),
    "rsub": lambda x: 2.0 - x,
    "rpow": lambda x: 2.0 ** x.tanh(),
}
VALUE_BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (y * y + 1.0),
    "pow": lambda x, y: (x * x + 1.0) ** y.tanh(),
}


@st.composite
def value_programs(draw):
    """Leaf numbers, then steps (op, i, j) that each add one node; i == j is a fork."""
    leaves = draw(st.lists(st.floats(-2, 2), min_size=1, max_size=4))
    steps = []
    for size in range(len(leaves), len(leaves) + draw(st.integers(1, 8))):
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(sorted(VALUE_UNARY))),
                          draw(st.integers(0, size - 1)), None))
        else:
            steps.append((draw(st.sampled_from(sorted(VALUE_BINARY))),
                          draw(st.integers(0, size - 1)), draw(st.integers(0, size - 1))))
    weights = draw(st.lists(st.floats(-1, 1), min_size=len(leaves) + len(steps),
                            max_size=len(leaves) + len(steps)))
    return leaves, steps, weights


def run_value_program(program, leaves):
    """Every node of the program, and a weighted sum of them all as the output."""
    _, steps, weights = program
    pool = list(leaves)
    for op, i, j in steps:
        pool.append(VALUE_UNARY[op](pool[i]) if j is None else VALUE_BINARY[op](pool[i], pool[j]))
    return pool, sum(w * node for w, node in zip(weights, pool, strict=True))


def check_value_program(program) -> list[Value]:
    leaves = [Value(x) for x in program[0]]
    pool, out = run_value_program(program, leaves)
    for (op, i, _), node in zip(program[1], pool[len(leaves):], strict=True):
        assume(abs(node.data) < 1e3)
        if op == "relu":
            assume(abs(pool[i].data) > 1e-4)  # no finite difference across the kink
    out.backward()
    return pool


@PROPERTY
@given(value_programs())
def test_value_graphs_match_finite_differences(program):
    leaves = [Value(x) for x in program[0]]
    pool = check_value_program(program)
    result = gradcheck(lambda *xs: run_value_program(program, xs)[1], leaves)
    scale = 1 + max(abs(node.grad) for node in pool)
    assert result.max_abs_error <= 1e-6 * scale


@PROPERTY
@given(value_programs())
def test_value_graphs_match_pytorch(program):
    torch = pytest.importorskip("torch")
    pool = check_value_program(program)
    leaves = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in program[0]]
    torch_pool, torch_out = run_value_program(program, leaves)
    for node in torch_pool[len(leaves):]:
        node.retain_grad()
    torch_out.backward()
    np.testing.assert_allclose([node.data for node in pool],
                               [node.item() for node in torch_pool], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose([node.grad for node in pool],
                               [node.grad.item() for node in torch_pool], rtol=1e-9, atol=1e-9)


def _sqnorm(x):
    return x.sqnorm() if isinstance(x, Tensor) else (x * x).sum()


# name: (function, which shapes it takes)
TENSOR_UNARY = {
    **{name: (f, lambda shape: True) for name, f in VALUE_UNARY.items()},
    "square_method": (lambda x: x.square(), lambda shape: True),
    "transpose": (lambda x: x.T, lambda shape: len(shape) == 2),
    "sum": (lambda x: x.sum(), lambda shape: True),
    "mean": (lambda x: x.mean(), lambda shape: True),
    "sum0": (lambda x: x.sum(0), lambda shape: len(shape) >= 1),
    "mean0": (lambda x: x.mean(0), lambda shape: len(shape) >= 1),
    "sum_last": (lambda x: x.sum(-1), lambda shape: len(shape) == 2),
    "mean1": (lambda x: x.mean(1), lambda shape: len(shape) == 2),
    "sqnorm": (_sqnorm, lambda shape: True),
    "index": (lambda x: x[0], lambda shape: len(shape) >= 1),
}
TENSOR_BINARY = {**VALUE_BINARY, "matmul": lambda x, y: x @ y}
LEAF_SHAPES = [(), (3,), (2,), (1, 3), (2, 1), (2, 3), (3, 2)]


def _result_shape(op: str, a: tuple, b: tuple) -> tuple | None:
    """The shape of ``op`` on shapes a and b, or None if they do not fit."""
    if op == "matmul":
        if not (1 <= len(a) <= 2 and 1 <= len(b) <= 2) or a[-1] != b[0]:
            return None
        return (np.zeros(a) @ np.zeros(b)).shape
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


@st.composite
def tensor_programs(draw):
    shapes = draw(st.lists(st.sampled_from(LEAF_SHAPES), min_size=1, max_size=3))
    leaves = [draw(st.lists(st.floats(-2, 2), min_size=math.prod(s), max_size=math.prod(s)))
              for s in shapes]
    leaves = [np.reshape(values, shape) for values, shape in zip(leaves, shapes, strict=True)]
    shapes = list(shapes)
    steps = []
    for _ in range(draw(st.integers(1, 7))):
        i = draw(st.integers(0, len(shapes) - 1))
        binary = [(op, j, shape) for op in sorted(TENSOR_BINARY) for j in range(len(shapes))
                  if (shape := _result_shape(op, shapes[i], shapes[j])) is not None]
        if binary and draw(st.booleans()):
            op, j, shape = draw(st.sampled_from(binary))
            steps.append((op, i, j))
        else:
            op = draw(st.sampled_from([name for name, (_, fits) in sorted(TENSOR_UNARY.items())
                                       if fits(shapes[i])]))
            steps.append((op, i, None))
            shape = np.shape(TENSOR_UNARY[op][0](Tensor(np.zeros(shapes[i]))).data)
        shapes.append(tuple(shape))
    weights = draw(st.lists(st.floats(-1, 1), min_size=len(shapes), max_size=len(shapes)))
    return leaves, steps, weights


def run_tensor_program(program, leaves):
    _, steps, weights = program
    pool = list(leaves)
    for op, i, j in steps:
        pool.append(TENSOR_UNARY[op][0](pool[i]) if j is None
                    else TENSOR_BINARY[op](pool[i], pool[j]))
    return pool, sum((w * node).sum() for w, node in zip(weights, pool, strict=True))


def check_tensor_program(program) -> tuple[list[Tensor], list[Tensor]]:
    leaves = [Tensor(x, requires_grad=True) for x in program[0]]
    pool, out = run_tensor_program(program, leaves)
    for (op, i, _), node in zip(program[1], pool[len(leaves):], strict=True):
        assume(np.all(np.abs(node.data) < 1e3))
        if op == "relu":
            assume(np.all(np.abs(pool[i].data) > 1e-4))
    out.backward()
    for node in pool:
        assert node.grad.shape == node.shape
    return leaves, pool


@PROPERTY
@given(tensor_programs())
def test_tensor_graphs_match_finite_differences(program):
    leaves, pool = check_tensor_program(program)
    result = gradcheck(lambda *xs: run_tensor_program(program, xs)[1], leaves)
    scale = 1 + max(float(np.max(np.abs(node.grad), initial=0.0)) for node in pool)
    assert result.max_abs_error <= 1e-6 * scale


@PROPERTY
@given(tensor_programs())
def test_tensor_graphs_match_pytorch(program):
    torch = pytest.importorskip("torch")
    _, pool = check_tensor_program(program)
    leaves = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in program[0]]
    torch_pool, torch_out = run_tensor_program(program, leaves)
    for node in torch_pool[len(leaves):]:
        node.retain_grad()
    torch_out.backward()
    for ours, theirs in zip(pool, torch_pool, strict=True):
        np.testing.assert_allclose(ours.data, theirs.detach().numpy(), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- micrograd

# The example of micrograd's README, then more of micrograd's surface: sum()
# over a list, reflected operators, and a few steps of gradient descent.
MICROGRAD_SCRIPT = """
{import_line}

a = Value(-4.0)
b = Value(2.0)
c = a + b
d = a * b + b**3
c += c + 1
c += 1 + c + (-a)
d += d * 2 + (b + a).relu()
d += 3 * d + (b - a).relu()
e = c - d
f = e**2
g = f / 2.0
g += 10.0 / f
g.backward()
readme = (g.data, a.grad, b.grad)

w, bias = [Value(0.5), Value(-0.25)], Value(0.1)
data = [([1.0, 2.0], 1.0), ([-1.0, 0.5], -1.0), ([0.3, -2.0], 1.0)]
for step in range(5):
    scores = [sum((wi * xi for wi, xi in zip(w, x)), bias) for x, _ in data]
    losses = [(1 + -y * s).relu() for (_, y), s in zip(data, scores)]
    loss = sum(losses) / len(losses) + 1e-2 * sum([p**2 for p in w])
    for p in [*w, bias]:
        p.grad = 0
    loss.backward()
    for p in [*w, bias]:
        p.data -= 0.1 * p.grad
trained = [p.data for p in [*w, bias]] + [loss.data, 2 - w[0], 3 / w[1] - 1]
"""


def run_micrograd_script(import_line: str) -> dict:
    namespace: dict = {}
    exec(MICROGRAD_SCRIPT.format(import_line=import_line), namespace)
    return namespace


def test_micrograd_script_runs_unchanged_and_agrees_with_micrograd():
    pytest.importorskip("micrograd")
    ours = run_micrograd_script("from backpropviz import Value")
    theirs = run_micrograd_script("from micrograd.engine import Value")
    # The numbers micrograd's README prints.
    assert [f"{x:.4f}" for x in ours["readme"]] == ["24.7041", "138.8338", "645.5773"]
    # micrograd divides by multiplying with b**-1, so the last bits may differ.
    np.testing.assert_allclose(ours["readme"], theirs["readme"], rtol=1e-12)
    assert type(ours["trained"][-1]) is engine.Value
    mine = [x if isinstance(x, float) else x.data for x in ours["trained"]]
    reference = [x if isinstance(x, float) else x.data for x in theirs["trained"]]
    np.testing.assert_allclose(mine, reference, rtol=1e-12)


def test_micrograd_attributes_for_its_drawing_code():
    a = Value(3.0)
    b = a * a
    c = b + 1
    assert b._prev == {a} and c._prev == {b, c.operands[1]}
    assert (a._op, b._op, c._op, (a ** 2)._op) == ("", "×", "+", "(·)²")


# ---------------------------------------------------------------- the record


def test_a_times_a_keeps_two_edges():
    a = Value(3.0)
    b = a * a
    assert b.operands == (a, a)
    b.backward(2.0)
    assert b._sent == (6.0, 6.0)  # each edge sends g * (the other operand)
    assert a.grad == 12.0


@pytest.mark.slow
def test_million_node_chain_backward():
    x = Value(0.5)
    node = x
    for _ in range(1_000_000):
        node = -node
    node.backward()
    assert x.grad == 1.0
    assert node.operands[0].grad == -1.0


def test_repeated_backward_accumulates_like_pytorch():
    torch = pytest.importorskip("torch")
    x = Value(3.0)
    y = x * x  # an intermediate with a fork below it
    z = y * 2 + y
    z.backward()
    once = (x.grad, y.grad, z.grad)
    z.backward()
    assert (x.grad, y.grad, z.grad) == tuple(2 * g for g in once)
    # The tape holds the last pass: what it sent (dz/dy = 3, times x = 3, on each
    # edge), and x's gradient after each share, the first pass's 18 included.
    assert y._sent == (3.0 * 3.0, 3.0 * 3.0)
    assert y._sums == (18.0 + 9.0, 18.0 + 18.0)

    tx = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    ty = tx * tx
    tz = ty * 2 + ty
    ty.retain_grad()
    tz.retain_grad()
    tz.backward(retain_graph=True)
    tz.backward()
    assert (x.grad, y.grad, z.grad) == (tx.grad.item(), ty.grad.item(), tz.grad.item())

    z.zero_grad()
    assert (x.grad, y.grad, z.grad) == (0.0, 0.0, 0.0)
    assert y._sent is None and y._pass is None
    z.backward()
    assert (x.grad, y.grad, z.grad) == once


def test_a_gradient_left_at_minus_zero_is_added_to_as_ieee_adds():
    x = Value(3.0)
    y = x * 2.0
    z = y * -1.0
    y.grad = -0.0  # as an earlier pass could leave it
    z.backward(0.0)
    # y receives 0.0 * -1.0 = -0.0, and -0.0 + -0.0 stays -0.0 in .grad...
    assert math.copysign(1.0, y.grad) == -1.0
    assert math.copysign(1.0, z._sums[0]) == -1.0
    # ...but this pass alone gave y 0.0 + -0.0 = +0.0, which its rule sends on
    # (0.0 * 2.0 and 0.0 * 3.0), not .grad's -0.0.
    assert [math.copysign(1.0, g) for g in y._sent] == [1.0, 1.0]


def test_a_seed_of_minus_zero_reaches_the_rule_as_given():
    x = Value(3.0)
    y = x * 2.0
    y.backward(-0.0)
    assert y._sent[0] == 0.0 and math.copysign(1.0, y._sent[0]) == -1.0  # -0.0 * 2.0
    assert math.copysign(1.0, y.grad) == 1.0  # .grad adds the seed to its 0.0: +0.0


def test_repeated_backward_accumulates_for_tensors():
    W = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    h = (W @ Tensor([1.0, -1.0])).tanh()
    out = (h * h).sum()
    out.backward()
    once = W.grad.copy(), h.grad.copy()
    out.backward()
    np.testing.assert_array_equal(W.grad, 2 * once[0])
    np.testing.assert_array_equal(h.grad, 2 * once[1])
    out.zero_grad()
    assert W.grad is None and h.grad is None
    out.backward()
    np.testing.assert_array_equal(W.grad, once[0])


def test_every_node_keeps_its_gradient(example_names):
    g = example_names("d2l_mlp_scalar")
    for node in engine.topological_order([g["L"]]):
        assert node.has_grad
    assert g["L"].grad == 1.0


# ---------------------------------------------------------------- errors


def test_non_scalar_backward_needs_a_gradient_and_names_the_shape():
    t = Tensor(np.ones((2, 3))).tanh()
    with pytest.raises(EngineError, match=r"\(2, 3\)"):
        t.backward()
    with pytest.raises(EngineError, match=r"\(3,\).*\(2, 3\)"):
        t.backward(np.ones(3))
    t.backward(np.ones((2, 3)))
    np.testing.assert_allclose(t.grad, np.ones((2, 3)))


@pytest.mark.parametrize("build", [
    lambda: Tensor(np.ones((2, 3))) + Tensor(np.ones(4)),
    lambda: Tensor(np.ones((2, 3))) * Tensor(np.ones((3, 2))),
    lambda: Tensor(np.ones((2, 3))) @ Tensor(np.ones(4)),
    lambda: Tensor(np.ones(4)) @ Tensor(np.ones((2, 3))),
])
def test_shape_errors_name_both_shapes(build):
    with pytest.raises(EngineError) as error:
        build()
    message = str(error.value)
    assert "(2, 3)" in message and ("(4,)" in message or "(3, 2)" in message)


def test_axis_out_of_range_names_the_shape():
    with pytest.raises(EngineError, match=r"axis 2 .*\(2, 3\)"):
        Tensor(np.ones((2, 3))).sum(2)


@pytest.mark.parametrize(("build", "type_name"), [
    (lambda: Value("1.5"), "str"),
    (lambda: Value(None), "NoneType"),
    (lambda: Value([1.0]), "list"),
    (lambda: Value(True), "bool"),
    (lambda: Value(1.0) + "a", "str"),
    (lambda: "a" * Value(1.0), "str"),
    (lambda: Value(1.0) ** "a", "str"),
    (lambda: Tensor("abc"), "str"),
    (lambda: Tensor([1.0, "a"]), "str"),
    (lambda: Tensor({"a": 1}), "dict"),
    (lambda: Tensor([1.0]) + Value(1.0), "Value"),
    (lambda: Value(1.0) + Tensor([1.0]), "Tensor"),
])
def test_non_numeric_data_is_a_type_error_naming_the_type(build, type_name):
    with pytest.raises(TypeError, match=type_name):
        build()


def test_ieee_results_instead_of_exceptions():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log = Value(-1.0).log()
        assert math.isnan(log.data)
        log.backward()
        assert log.operands[0].grad == -1.0
        assert (Value(1.0) / 0.0).data == math.inf
        assert math.isnan((Value(0.0) / 0.0).data)
        assert (Value(1000.0).exp()).data == math.inf
        assert math.isnan((Value(-1.0) ** 0.5).data)
        assert (Value(0.0) ** -1).data == math.inf
        assert (Value(-1000.0).sigmoid().data, Value(1000.0).sigmoid().data) == (0.0, 1.0)
        t = Tensor([-1.0, 0.0, 1000.0])
        assert listed(t.log().data)[:2] == [pytest.approx(math.nan, nan_ok=True), -math.inf]
        assert listed((1 / t).data)[1] == math.inf
        assert listed(t.exp().data)[2] == math.inf
        (t.log() + t.exp()).sum().backward()
        assert listed(t.grad)[:2] == [pytest.approx(math.e ** -1 - 1), math.inf]


def test_ieee_results_match_pytorch():
    torch = pytest.importorskip("torch")
    data = [-1.0, 0.0, 2.0, 1000.0]
    for name in ("log", "exp", "sigmoid", "tanh", "relu"):
        ours = getattr(Tensor(data), name)().data
        theirs = getattr(torch.tensor(data, dtype=torch.float64), name)().numpy()
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal((1 / Tensor(data)).data,
                                  (1 / torch.tensor(data, dtype=torch.float64)).numpy())


# A divisor whose square leaves the floats: b² overflows beyond 1.3e154 and is 0 below
# 1e-162, yet -a/b² is a float (or an IEEE inf) all the same.
HUGE_AND_TINY = [(1.0, 2e154), (3.0, -1e200), (-2.0, 1e308), (1e-200, 1e-200),
                 (5.0, -1e-170), (1.0, 1e-160), (2.0, 5e-324)]


@pytest.mark.parametrize(("a", "b"), HUGE_AND_TINY)
def test_division_by_a_huge_or_tiny_divisor_gives_the_floats_gradient(a, b):
    x, y = Value(a), Value(b)
    (x / y).backward()
    assert x.grad == 1.0 / b
    assert y.grad == -(a / b / b)  # plain float arithmetic, in the order that keeps it a float
    h = abs(b) * 1e-6  # and the slope between two nearby divisors, where it is a number
    if math.isfinite(y.grad) and y.grad != 0.0:
        assert y.grad == pytest.approx((a / (b + h) - a / (b - h)) / (2 * h), rel=1e-6)


def test_division_by_a_huge_or_tiny_divisor_matches_pytorch():
    torch = pytest.importorskip("torch")
    for a, b in HUGE_AND_TINY:
        x, y = Value(a), Value(b)
        (x / y).backward()
        tx, ty = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (a, b))
        (tx / ty).backward()
        assert (x.grad, y.grad) == (tx.grad.item(), ty.grad.item())


def test_gradcheck_catches_a_wrong_rule(monkeypatch):
    x = Value(1.5)
    assert gradcheck(lambda x: x.tanh() * x, [x]).max_abs_error < 1e-8
    # A classic slip: forgetting the local derivative 1 - tanh².
    monkeypatch.setitem(engine._VALUE_RULES, "tanh", lambda node, g: (g,))
    assert gradcheck(lambda x: x.tanh() * x, [x]).max_abs_error > 1.0


def test_gradcheck_reports_nan_and_unused_inputs():
    assert math.isnan(gradcheck(lambda x: x.log(), [Value(-2.0)]).max_abs_error)
    unused = Tensor([1.0, 2.0])
    result = gradcheck(lambda a, b: (a * a).sum(), [Tensor([3.0]), unused])
    assert result.max_abs_error < 1e-8
    with pytest.raises(EngineError, match="leaf"):
        gradcheck(lambda a: a, [Value(1.0) * 2])


# ---------------------------------------------------------------- saved values

# Each case: the op applied to fresh leaves with the given data. The rule may
# read exactly the values saved_for_backward names: poisoning the others with
# nan must leave the gradients bit for bit, poisoning a saved one must not.
SAVED_CASES = {
    "add": (lambda a, b: a + b, [1.5, -2.0]),
    "sub": (lambda a, b: a - b, [1.5, -2.0]),
    "mul": (lambda a, b: a * b, [1.5, -2.0]),
    "div": (lambda a, b: a / b, [1.5, -2.0]),
    "neg": (lambda a: -a, [1.5]),
    "pow": (lambda a: a ** 3, [1.5]),
    "pow_node": (lambda a, b: a ** b, [1.5, -2.0]),
    "relu": (lambda a: a.relu(), [1.5]),
    "tanh": (lambda a: a.tanh(), [1.5]),
    "exp": (lambda a: a.exp(), [1.5]),
    "log": (lambda a: a.log(), [1.5]),
    "sigmoid": (lambda a: a.sigmoid(), [1.5]),
}
TENSOR_SAVED_CASES = {
    **{name: (build, [np.full((2, 3), x) + np.arange(6).reshape(2, 3) / 10 for x in data])
       for name, (build, data) in SAVED_CASES.items()},
    "matmul": (lambda a, b: a @ b, [np.arange(6.0).reshape(2, 3) + 1, np.ones((3, 2)) * 0.5]),
    "square": (lambda a: a.square(), [np.arange(6.0).reshape(2, 3) + 1]),
    "sqnorm": (lambda a: a.sqnorm(), [np.arange(6.0).reshape(2, 3) + 1]),
    "sum": (lambda a: a.sum(), [np.arange(6.0).reshape(2, 3)]),
    "sum_axis": (lambda a: a.sum(1), [np.arange(6.0).reshape(2, 3)]),
    "mean": (lambda a: a.mean(), [np.arange(6.0).reshape(2, 3)]),
    "mean_axis": (lambda a: a.mean(0), [np.arange(6.0).reshape(2, 3)]),
    "transpose": (lambda a: a.T, [np.arange(6.0).reshape(2, 3)]),
    "getitem": (lambda a: a[1], [np.arange(6.0).reshape(2, 3)]),
}


def _gradients_with(kind, build, data, poisoned: set) -> list:
    leaves = [kind(x) for x in data]
    out = build(*leaves)
    members = {"out": out, **dict(enumerate(out.operands))}
    saved = {key for key, node in members.items() if node in saved_for_backward(out)}
    for key in poisoned:
        members[key].data = (math.nan if kind is Value
                             else np.full(np.shape(members[key].data), math.nan))
    g = 0.7 if kind is Value else np.full(out.shape, 0.7)
    out.backward(g)
    return saved, set(members), [np.asarray(leaf.grad).tolist() for leaf in leaves]


@pytest.mark.parametrize(("kind", "case"), [(Value, name) for name in SAVED_CASES]
                         + [(Tensor, name) for name in TENSOR_SAVED_CASES])
def test_saved_for_backward_names_what_the_rule_reads(kind, case):
    build, data = (SAVED_CASES if kind is Value else TENSOR_SAVED_CASES)[case]
    saved, members, clean = _gradients_with(kind, build, data, set())
    assert clean == _gradients_with(kind, build, data, members - saved)[2]
    for key in saved:
        assert clean != _gradients_with(kind, build, data, {key})[2], key


def test_saved_for_backward_of_the_mlp(example_names):
    g = example_names("d2l_mlp")
    assert saved_for_backward(g["z"]) == (g["W1"], g["x"])  # matmul reads both factors
    assert saved_for_backward(g["h"]) == (g["z"],)  # relu reads its input's sign
    assert saved_for_backward(g["W1"]) == ()  # a leaf has no rule


def test_power_symbols_for_any_exponent():
    symbols = [(Value(2.0) ** e)._op for e in (2, -1, 0.5, math.inf, math.nan)]
    assert symbols == ["(·)²", "(·)⁻¹", "(·)⁰·⁵", "(·)inf", "(·)nan"]
    assert (Value(2.0) ** Value(3.0))._op == "(·)ʸ"


def test_a_value_of_more_than_two_operands_is_a_clear_error():
    a, b, c = Value(1.0), Value(2.0), Value(3.0)
    with pytest.raises(EngineError, match="at most two operands, got 3"):
        Value(6.0, (a, b, c), "add")
    assert Value(3.0, [a, b], "add").operands == (a, b)  # any sequence, kept in order


def test_an_op_without_a_rule_is_a_clear_error():
    a, b = Value(1.0), Value(2.0)
    c = Value(3.0, (a, b), "+")  # micrograd's constructor, with micrograd's op name
    with pytest.raises(EngineError, match=r"op '\+' has no backward rule .*add, div"):
        c.backward()
