"""Tensor: a float64 array that records its graph, for the matrix form of a network."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from . import ops
from .groups import current as _open_groups
from .node import (
    _TENSOR_RULES,
    EngineError,
    Node,
    _creation_counter,
    _real,
    _tensor_rule,
    topological_order,
)
from .value import Value

__all__ = ["Tensor"]


def _as_array(data: Any, what: str) -> np.ndarray:
    if isinstance(data, Node):
        raise TypeError(f"{what} must be numbers, got a {type(data).__name__}")
    try:
        array = np.array(data, dtype=np.float64)
    except (TypeError, ValueError):
        kind = type(data).__name__
        if isinstance(data, (list, tuple)):
            inner = {type(x).__name__ for x in np.ravel(np.array(data, dtype=object))
                     if not isinstance(x, numbers.Real)}
            kind = f"{kind} containing {', '.join(sorted(inner)) or 'ragged rows'}"
        raise TypeError(f"{what} must be numeric, got {kind}") from None
    return array


def _unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum a gradient over the axes that broadcasting added or stretched."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra:
        grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(axis=stretched, keepdims=True)
    return grad


class Tensor(Node):
    """A float64 array that records its graph, for the matrix form of a network.

    ``Tensor([[1., -1.], [0., 1.]], label="W1", requires_grad=True)``. Like
    PyTorch, ``.grad`` is None until a backward pass reaches the tensor.
    """

    # ``_sent`` and ``_sums`` are the tape (see Node), ``_upstream`` the sum a pass builds.
    __slots__ = ("_sent", "_sums", "_upstream", "axis", "index", "keep", "keepdims", "operands",
                 "rate")
    _no_grad = None  # PyTorch's .grad before backward
    _rules = _TENSOR_RULES

    def __init__(self, data: Any, label: str | None = None, requires_grad: bool = False,
                 *, _children: tuple[Tensor, ...] = (), _op: str | None = None,
                 exponent: float | None = None, axis: Any = None) -> None:
        self.data = data if type(data) is np.ndarray and data.dtype == np.float64 \
            else _as_array(data, "Tensor data")
        self.grad = None
        self.label = label or None
        self.op = _op
        self.operands = _children
        self.exponent = exponent
        self.axis = axis  # a reduction's (sum, mean)
        self.index = None  # what indexing picked
        self.keepdims = False  # a reduction that keeps its reduced axes, of length 1
        self.keep = self.rate = None  # dropout's mask and p
        self.requires_grad = requires_grad
        self._index = next(_creation_counter)
        self._sent = self._sums = self._pass = self._seed = self._used = None
        self._passes = 0
        self._group = _open_groups()  # the groups (with group(...)) it was made in

    def __repr__(self) -> str:
        name = f", label={self.label!r}" if self.label else ""
        return f"Tensor({self.data.tolist()}, grad={_listed(self.grad)}{name})"

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    def item(self) -> float:
        if self.data.size != 1:
            raise EngineError(f"item() needs a single number, this Tensor has shape {self.shape}")
        return float(self.data.reshape(()))

    def numpy(self) -> np.ndarray:
        return self.data

    def _seed_for(self, gradient: Any) -> np.ndarray:
        if gradient is None:
            if self.data.size != 1:
                raise EngineError(
                    f"backward() on a Tensor of shape {self.shape} needs a gradient of "
                    f"that shape; only a single number is seeded with 1 automatically")
            return np.ones_like(self.data)
        seed = _as_array(gradient.data if isinstance(gradient, Tensor) else gradient,
                         "the gradient")
        if seed.shape != self.shape:
            raise EngineError(f"the gradient has shape {seed.shape}, "
                              f"but the Tensor has shape {self.shape}")
        return seed

    def _clear_grad(self) -> None:
        super()._clear_grad()
        self._sent = self._sums = None

    def _sweep(self, seed: np.ndarray, number: int) -> None:
        """Run the chain rule from this root backwards, as pass ``number``."""
        order = topological_order([self])
        for node in order:
            # None, not zeros: the first contribution is kept as it is, so a
            # gradient of -0.0 stays -0.0, as in PyTorch.
            node._upstream = None
        root = order[-1]
        root._upstream = seed
        root.grad = seed.copy() if root.grad is None else root.grad + seed
        for node in reversed(order):
            upstream = node._upstream
            node._upstream = None  # let the array go
            if node._passes and upstream is not None and np.array_equal(node.grad, upstream):
                node._passes = 0  # .grad was reset (w.grad = None) since: it holds this pass only
            node._passes += 1
            if node.op is None:
                node._used = node.data.copy()  # an update may change it in place
                continue
            contributions = _TENSOR_RULES[node.op](node, upstream)
            sums = []
            for operand, contribution in zip(node.operands, contributions, strict=True):
                pending = operand._upstream
                operand._upstream = contribution if pending is None else pending + contribution
                # A copy, because contributions may share memory with each other;
                # each sum is a new array, so the recorded ones stay as they were.
                grad = operand.grad
                operand.grad = contribution.copy() if grad is None else grad + contribution
                sums.append(operand.grad)
            node._sums = tuple(sums)
            node._sent = contributions
            node._pass = number

    def _operand(self, other: Any) -> Tensor:
        if type(other) is Tensor:
            return other
        if isinstance(other, Value):
            raise TypeError("cannot combine a Tensor with a Value; use one or the other")
        constant = Tensor(_as_array(other, "an operand"))
        constant.requires_grad = None  # a number written in the script: a constant
        return constant

    def _elementwise(self, other: Any, op: str, compute: Callable) -> Tensor:
        other = self._operand(other)
        try:
            np.broadcast_shapes(self.shape, other.shape)
        except ValueError:
            raise EngineError(f"cannot {ops.get(op).verb} shapes {self.shape} and "
                              f"{other.shape}: they do not broadcast") from None
        with np.errstate(all="ignore"):
            return Tensor(compute(self.data, other.data), _children=(self, other), _op=op)

    def _unary(self, op: str, result: np.ndarray, axis: Any = None) -> Tensor:
        return Tensor(result, _children=(self,), _op=op, axis=axis)

    # ------------------------------------------------------------ ops
    # As for Value: each op's forward computation, then its backward rule. An
    # operand that broadcasting stretched gets its gradient summed back
    # (_unbroadcast), so every contribution has its operand's shape.

    def __add__(self, other: Any) -> Tensor:
        return self._elementwise(other, "add", np.add)

    @_tensor_rule("add")
    def _add_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b = node.operands
        return _unbroadcast(g, a.shape), _unbroadcast(g, b.shape)  # d(a+b) = da + db

    def __sub__(self, other: Any) -> Tensor:
        return self._elementwise(other, "sub", np.subtract)

    @_tensor_rule("sub")
    def _sub_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b = node.operands
        return _unbroadcast(g, a.shape), _unbroadcast(-g, b.shape)  # d(a-b) = da - db

    def __mul__(self, other: Any) -> Tensor:
        return self._elementwise(other, "mul", np.multiply)

    @_tensor_rule("mul")
    def _mul_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b = node.operands
        # d(a⊙b)/da = b, d(a⊙b)/db = a, entry by entry
        return _unbroadcast(g * b.data, a.shape), _unbroadcast(g * a.data, b.shape)

    def __truediv__(self, other: Any) -> Tensor:
        return self._elementwise(other, "div", np.divide)

    @_tensor_rule("div")
    def _div_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b = node.operands
        with np.errstate(all="ignore"):  # d(a/b) = da/b - a db/b²
            return (_unbroadcast(g / b.data, a.shape),
                    _unbroadcast(-g * a.data / b.data ** 2, b.shape))

    def __radd__(self, other: Any) -> Tensor:
        return self._operand(other) + self

    def __rsub__(self, other: Any) -> Tensor:
        return self._operand(other) - self

    def __rmul__(self, other: Any) -> Tensor:
        return self._operand(other) * self

    def __rtruediv__(self, other: Any) -> Tensor:
        return self._operand(other) / self

    def __pow__(self, other: Any) -> Tensor:
        if isinstance(other, Tensor):
            return self._elementwise(other, "pow", np.power)
        exponent = _real(other, "an exponent")
        with np.errstate(all="ignore"):
            return Tensor(np.power(self.data, exponent), _children=(self,), _op="pow",
                          exponent=exponent)

    def __rpow__(self, other: Any) -> Tensor:
        return self._operand(other) ** self

    @_tensor_rule("pow")
    def _pow_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray, ...]:
        a = node.operands[0].data
        with np.errstate(all="ignore"):
            if len(node.operands) == 1:
                n = node.exponent
                # n a^(n-1); a^0 is the constant 1, flat even at a = 0.
                return (np.zeros_like(g) if n == 0 else g * n * np.power(a, n - 1),)
            b = node.operands[1].data
            # b a^(b-1) and a^b ln a, with the same zeros as the scalar rule.
            da = np.where(b == 0, 0.0, g * b * np.power(a, b - 1))
            db = np.where((a == 0) & (b >= 0), 0.0, g * node.data * np.log(a))
            return _unbroadcast(da, a.shape), _unbroadcast(db, b.shape)

    def __neg__(self) -> Tensor:
        return self._unary("neg", np.negative(self.data))

    @_tensor_rule("neg")
    def _neg_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        return (-g,)

    def __matmul__(self, other: Any) -> Tensor:
        other = self._operand(other)
        a, b = self.shape, other.shape
        if not (1 <= len(a) <= 2 and 1 <= len(b) <= 2) or a[-1] != b[0]:
            raise EngineError(f"cannot matrix-multiply shapes {a} and {b}")
        return Tensor(self.data @ other.data, _children=(self, other), _op="matmul")

    def __rmatmul__(self, other: Any) -> Tensor:
        return self._operand(other) @ self

    @_tensor_rule("matmul")
    def _matmul_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b = node.operands
        # Treat a vector on the left as a row and on the right as a column; then
        # d(AB)/dA = G Bᵀ and d(AB)/dB = Aᵀ G, reshaped back to the operands.
        a2 = a.data if a.ndim == 2 else a.data[None, :]
        b2 = b.data if b.ndim == 2 else b.data[:, None]
        g2 = g.reshape(a2.shape[0], b2.shape[1])
        # Where a vector makes the sum a single term (an outer product), multiply
        # instead: BLAS adds that term to +0.0 and would lose a -0.0 that PyTorch keeps.
        grad_a = g2 * b2.T if b2.shape[1] == 1 else g2 @ b2.T
        grad_b = a2.T * g2 if a2.shape[0] == 1 else a2.T @ g2
        return grad_a.reshape(a.shape), grad_b.reshape(b.shape)

    def __getitem__(self, index: Any) -> Tensor:
        try:
            picked = np.array(self.data[index], dtype=np.float64)
        except IndexError as error:
            raise EngineError(f"index {index!r} does not fit shape {self.shape}: {error}") from None
        out = Tensor(picked, _children=(self,), _op="getitem")
        out.index = index
        return out

    @_tensor_rule("getitem")
    def _getitem_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        # The picked entries get the gradient, the others 0; an entry picked
        # twice gets both (np.add.at adds at repeated indices).
        spread = np.zeros(node.operands[0].shape)
        np.add.at(spread, node.index, g)
        return (spread,)

    def relu(self) -> Tensor:
        return self._unary("relu", np.where(self.data > 0, self.data, 0.0))

    @_tensor_rule("relu")
    def _relu_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        # φ'(z) = 1[z > 0]: the ReLU passes the gradient where the unit is alive
        # and blocks it where it is dead, an exact zero.
        return (np.where(node.operands[0].data > 0, g, 0.0),)

    def dropout(self, p: float = 0.5, seed: int | None = None) -> Tensor:
        """Inverted dropout, as in training: each entry is kept with probability
        1 − p and scaled by 1/(1 − p), the others set to 0 (``seed`` fixes the mask)."""
        if not 0 <= p < 1:
            raise EngineError(f"dropout's p is the probability of dropping, in [0, 1); got {p}")
        keep = np.random.default_rng(seed).random(self.shape) >= p
        out = self._unary("dropout", np.where(keep, self.data / (1 - p), 0.0))
        out.keep, out.rate = keep, p
        return out

    @_tensor_rule("dropout")
    def _dropout_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        # d(m a / (1-p))/da = m / (1-p): kept units pass it scaled, dropped ones nothing.
        return (np.where(node.keep, g / (1 - node.rate), 0.0),)

    def tanh(self) -> Tensor:
        return self._unary("tanh", np.tanh(self.data))

    @_tensor_rule("tanh")
    def _tanh_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        return (g * (1.0 - node.data ** 2),)  # tanh' = 1 - tanh²

    def exp(self) -> Tensor:
        with np.errstate(all="ignore"):
            return self._unary("exp", np.exp(self.data))

    @_tensor_rule("exp")
    def _exp_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        return (g * node.data,)  # exp' = exp

    def log(self) -> Tensor:
        with np.errstate(all="ignore"):
            return self._unary("log", np.log(self.data))

    @_tensor_rule("log")
    def _log_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        with np.errstate(all="ignore"):
            return (g / node.operands[0].data,)  # log' = 1/a

    def sqrt(self) -> Tensor:
        with np.errstate(all="ignore"):
            return self._unary("sqrt", np.sqrt(self.data))

    @_tensor_rule("sqrt")
    def _sqrt_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        with np.errstate(all="ignore"):
            return (g / (2.0 * node.data),)  # d√a/da = 1/(2√a)

    def sigmoid(self) -> Tensor:
        with np.errstate(all="ignore"):
            x = self.data
            # exp of a non-positive number never overflows; pick the form per sign.
            e = np.exp(-np.abs(x))
            return self._unary("sigmoid", np.where(x >= 0, 1 / (1 + e), e / (1 + e)))

    @_tensor_rule("sigmoid")
    def _sigmoid_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        return (g * node.data * (1.0 - node.data),)  # σ' = σ(1-σ)

    def square(self) -> Tensor:
        return self._unary("square", np.square(self.data))

    @_tensor_rule("square")
    def _square_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        return (2.0 * node.operands[0].data * g,)  # d(a²)/da = 2a

    def sqnorm(self) -> Tensor:
        """The squared Frobenius norm, ‖A‖²_F: the sum of squared entries."""
        return self._unary("sqnorm", np.array(np.sum(np.square(self.data))))

    @_tensor_rule("sqnorm")
    def _sqnorm_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        return (2.0 * node.operands[0].data * g,)  # d‖A‖²/dA = 2A

    def sum(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        """The sum of all entries, or along ``axis`` (an int or a tuple of ints, negative
        from the end), as numpy's: ``keepdims`` keeps each summed axis, of length 1."""
        return self._reduce("sum", np.sum, axis, keepdims)

    @_tensor_rule("sum")
    def _sum_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        return (_spread(node, g),)  # every summed entry moves the sum one for one

    def mean(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        """The mean of all entries, or along ``axis``, as ``sum`` takes them."""
        return self._reduce("mean", np.mean, axis, keepdims)

    @_tensor_rule("mean")
    def _mean_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        # The mean of k entries moves by 1/k for each.
        return (_spread(node, g) * (node.data.size / node.operands[0].data.size),)

    def _reduce(self, op: str, reduce: Callable, axis: Any, keepdims: Any) -> Tensor:
        axis = self._checked_axis(axis)
        if not isinstance(keepdims, bool | np.bool_):
            raise EngineError(f"keepdims is True or False, got {keepdims!r}")
        out = self._unary(op, np.array(reduce(self.data, axis=axis, keepdims=keepdims)), axis)
        out.keepdims = bool(keepdims)
        return out

    def _checked_axis(self, axis: Any) -> int | tuple[int, ...] | None:
        """``axis`` as numpy takes it (a list as a tuple); EngineError for one out of range,
        given twice, or not an int."""
        if axis is None:
            return None
        axes = tuple(axis) if isinstance(axis, tuple | list) else (axis,)
        for one in axes:
            if not isinstance(one, numbers.Integral) or isinstance(one, bool | np.bool_):
                raise EngineError(f"an axis is an int or a tuple of ints, got {axis!r}")
            if not -self.ndim <= one < self.ndim:
                raise EngineError(f"axis {one} is out of range for shape {self.shape}")
        if len({one % self.ndim for one in axes}) < len(axes):
            raise EngineError(f"axis {axis!r} names an axis twice")
        axes = tuple(int(one) for one in axes)
        return axes if isinstance(axis, tuple | list) else axes[0]

    @property
    def T(self) -> Tensor:  # noqa: N802 (numpy's and PyTorch's name)
        return self._unary("transpose", self.data.T.copy())

    @_tensor_rule("transpose")
    def _transpose_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        return (g.T.copy(),)


def _listed(array: np.ndarray | None) -> Any:
    return None if array is None else array.tolist()


def _spread(node: Tensor, g: np.ndarray) -> np.ndarray:
    """The upstream gradient of a reduction, copied back over the reduced axis."""
    shape = node.operands[0].shape
    if node.axis is not None and not node.keepdims:
        g = np.expand_dims(g, node.axis)  # back in place, of length 1, before the copying
    return np.broadcast_to(g, shape).copy()
