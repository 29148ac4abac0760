"""A small autograd engine that records its graph and every step of backward."""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import operator
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter, methodcaller
from typing import Any, NamedTuple

import numpy as np

from . import ops
from .errors import BackpropvizError
from .groups import current as _open_groups

__all__ = [
    "EngineError",
    "GradcheckResult",
    "Node",
    "Tensor",
    "Value",
    "apply",
    "backward_listeners",
    "can_apply",
    "gradcheck",
    "local_gradients",
    "saved_for_backward",
    "topological_order",
]


class EngineError(BackpropvizError, ValueError):
    """A computation the engine cannot perform, explained in one sentence."""


# Every node gets the next number when it is created. Operands always exist
# before their results, so sorting a graph by this number is a topological
# order, and it is the order in which the script computed things.
_creation_counter = itertools.count()


class Node:
    """What Value and Tensor share: the recorded graph and the backward record.

    ``operands`` is an ordered tuple, so ``a * a`` keeps two edges. After a
    backward pass, ``_sent[i]`` is the gradient this node sent back to
    ``operands[i]`` in the last pass, ``_sums[i]`` the gradient
    ``operands[i]`` held right after it arrived (the running sum, as the
    engine added it, earlier passes' gradients included), ``_step`` says when the pass
    processed it, and ``_passes`` counts the passes that reached the node.
    A leaf's ``_used`` is its data as the last pass found it: what the
    forward pass used, even after an update such as ``w.data -= lr * w.grad``.
    """

    __slots__ = (
        "_group", "_index", "_passes", "_seed", "_sent", "_step", "_sums", "_upstream", "_used",
        "data", "exponent", "grad", "label", "op", "operands", "requires_grad",
    )

    @property
    def is_leaf(self) -> bool:
        return self.op is None

    @property
    def has_grad(self) -> bool:
        """Whether a backward pass has reached this node (``.grad`` alone can't tell 0 apart)."""
        return self._passes > 0

    @property
    def _prev(self) -> set:
        """micrograd's name for the operands (unordered, as micrograd has it)."""
        return set(self.operands)

    @property
    def _op(self) -> str:
        """micrograd's name for the operator, as a symbol ('' for a leaf)."""
        return "" if self.op is None else ops.symbol(self.op, self.exponent)

    def _clear_grad(self) -> None:
        self.grad = self._no_grad
        self._sent = self._step = self._seed = self._sums = self._used = None
        self._passes = 0

    def zero_grad(self) -> None:
        """Forget every gradient in the graph below this node, and the tape."""
        for node in topological_order([self]):
            node._clear_grad()

    def backward(self, gradient: Any = None) -> None:
        """Fill ``.grad`` of every node this one depends on.

        A scalar root is seeded with 1; a non-scalar root needs ``gradient``.
        Gradients accumulate over repeated calls, as in PyTorch: call
        ``zero_grad()`` (or set ``.grad`` yourself) to start again. Every
        node keeps its gradient, intermediates included, so drawings can show
        them all. Each call records, per op, the contribution it sent along
        each operand edge and the running sum it made there: a gradient is
        added to as each contribution arrives, and that sum is what pictures
        of the steps show.
        """
        seed = self._seed_for(gradient)
        for listener in backward_listeners:
            listener(self)
        order = topological_order([self])
        self._seed = seed if self._seed is None else self._seed + seed
        try:
            Node._steps_taken = self._sweep(order, seed, Node._steps_taken)
        except KeyError as error:  # only a rule lookup raises it
            rules = _VALUE_RULES if isinstance(self, Value) else _TENSOR_RULES
            known = ", ".join(sorted(rules))
            raise EngineError(
                f"op {error.args[0]!r} has no backward rule (the ops are {known}); "
                "build nodes with operators and methods, not by passing an op name") from None

    # How many ops all backward passes so far have processed: ``_step``
    # numbers keep counting across passes, so the tape orders them all.
    _steps_taken = 0


# Told of every backward() call, with its root, before the pass runs: how the
# script front end finds a graph built inside a function (watch.py).
backward_listeners: list[Callable[[Any], None]] = []


def topological_order(roots: Iterable[Node]) -> list[Node]:
    """Every node the roots depend on, operands before results (no recursion)."""
    stack = list(dict.fromkeys(roots))
    seen = set(stack)
    pop, push, mark = stack.pop, stack.append, seen.add
    while stack:
        for operand in pop().operands:
            if operand not in seen:
                mark(operand)
                push(operand)
    return sorted(seen, key=attrgetter("_index"))


def saved_for_backward(node: Node) -> tuple[Node, ...]:
    """The values that ``node``'s backward rule reads (stored since forward)."""
    if node.op is None:
        return ()
    return tuple(node if where == "out" else node.operands[where]
                 for where in ops.get(node.op).saved(len(node.operands)))


# ---------------------------------------------------------------- rules

# Each op's backward rule, by op name: rule(result node, upstream gradient)
# returns one contribution per operand. The rules are written in the classes,
# right below the method that creates the op, and registered with these.
_VALUE_RULES: dict[str, Callable[[Any, Any], tuple]] = {}
_TENSOR_RULES: dict[str, Callable[[Any, Any], tuple]] = {}


def _rule_registrar(rules: dict[str, Callable]) -> Callable[[str], Callable]:
    def register_as(op: str) -> Callable[[Callable], staticmethod]:
        def register(rule: Callable) -> staticmethod:
            rules[op] = rule
            return staticmethod(rule)
        return register
    return register_as


_value_rule = _rule_registrar(_VALUE_RULES)
_tensor_rule = _rule_registrar(_TENSOR_RULES)


# ---------------------------------------------------------------- scalars


def _real(data: Any, what: str) -> float:
    if type(data) is float:
        return data
    if isinstance(data, numbers.Real) and not isinstance(data, bool):
        return float(data)
    if isinstance(data, np.ndarray) and data.shape == () and data.dtype.kind in "iuf":
        return float(data)
    raise TypeError(f"{what} must be a real number, got {type(data).__name__}")


def _ieee(function: Callable[..., float], *args: float) -> float:
    """``function(*args)``, with IEEE results (inf, nan) instead of exceptions."""
    try:
        return function(*args)
    except (ZeroDivisionError, OverflowError, ValueError):
        with np.errstate(all="ignore"):
            return float(_NUMPY_TWINS[function](*(np.float64(a) for a in args)))


def _divide(x: float, y: float) -> float:
    return x / y


def _power(x: float, y: float) -> float:
    return math.pow(x, y)


def _log(x: float) -> float:
    return math.log(x)


_NUMPY_TWINS = {_divide: np.divide, _power: np.power, math.exp: np.exp, _log: np.log,
                math.sqrt: np.sqrt}


class Value(Node):
    """A scalar that remembers how it was computed (micrograd-compatible).

    ``Value(2.0, label="a")``; ``requires_grad=True`` marks a parameter, which
    drawings fill light blue. Gradients are computed for every node either way.
    """

    __slots__ = ()
    _no_grad = 0.0  # micrograd's .grad before backward

    def __init__(self, data: Any, _children: Sequence[Value] = (), _op: str = "",
                 label: str | None = None, requires_grad: bool = False,
                 exponent: float | None = None) -> None:
        self.data = data if type(data) is float else _real(data, "Value data")
        self.grad = 0.0
        self.label = label or None
        self.op = _op or None
        self.operands = _children if type(_children) is tuple else tuple(_children)
        self.exponent = exponent
        self.requires_grad = requires_grad
        self._index = next(_creation_counter)
        self._sent = self._step = self._seed = self._sums = self._used = None
        self._passes = 0
        self._group = _open_groups()  # the groups (with group(...)) it was made in

    def __repr__(self) -> str:
        name = f", label={self.label!r}" if self.label else ""
        return f"Value(data={self.data}, grad={self.grad}{name})"

    @property
    def shape(self) -> tuple[()]:
        return ()

    def _seed_for(self, gradient: Any) -> float:
        return 1.0 if gradient is None else _real(gradient, "gradient")

    @staticmethod
    def _sweep(order: list[Value], seed: float, step: int) -> int:
        """Run the chain rule over ``order`` backwards; return the next step number."""
        for node in order:
            node._upstream = 0.0  # this pass's gradient, summed as it arrives
        root = order[-1]
        root._upstream = seed
        root.grad += seed
        rules = _VALUE_RULES
        # Reverse creation order: a node's gradient is complete before its
        # rule runs, because everything that used it was created after it.
        for node in reversed(order):
            upstream = node._upstream
            if node._passes and node.grad == upstream:
                node._passes = 0  # .grad was reset (w.grad = 0) since: it holds this pass only
            node._passes += 1
            op = node.op
            if op is None:
                node._used = node.data  # as the forward pass used it, before any update
                continue
            contributions = rules[op](node, upstream)
            # += at forks, into this pass's gradient and into .grad, whose
            # running sum is recorded; spelled out per arity: this is the
            # engine's hot loop, and a zip() here made the sweep a third slower.
            if len(contributions) == 2:
                a, b = node.operands
                contribution_a, contribution_b = contributions
                a._upstream += contribution_a
                a.grad += contribution_a
                sum_a = a.grad
                b._upstream += contribution_b
                b.grad += contribution_b
                node._sums = (sum_a, b.grad)
            else:
                operand = node.operands[0]
                operand._upstream += contributions[0]
                operand.grad += contributions[0]
                node._sums = (operand.grad,)
            node._sent = contributions
            node._step = step
            step += 1
        return step

    # ------------------------------------------------------------ ops
    # Each op: its forward computation, then its backward rule, which takes the
    # result node and the gradient g arriving from downstream and returns the
    # contribution for each operand: the local derivative times g.

    def __add__(self, other: Any) -> Value:
        other = other if type(other) is Value else _const_value(other)
        return Value(self.data + other.data, (self, other), "add")

    @_value_rule("add")
    def _add_rule(node: Value, g: float) -> tuple[float, float]:
        return g, g  # d(a+b) = da + db

    def __sub__(self, other: Any) -> Value:
        other = other if type(other) is Value else _const_value(other)
        return Value(self.data - other.data, (self, other), "sub")

    @_value_rule("sub")
    def _sub_rule(node: Value, g: float) -> tuple[float, float]:
        return g, -g  # d(a-b) = da - db

    def __mul__(self, other: Any) -> Value:
        other = other if type(other) is Value else _const_value(other)
        return Value(self.data * other.data, (self, other), "mul")

    @_value_rule("mul")
    def _mul_rule(node: Value, g: float) -> tuple[float, float]:
        a, b = node.operands
        return g * b.data, g * a.data  # d(ab)/da = b, d(ab)/db = a

    def __truediv__(self, other: Any) -> Value:
        other = other if type(other) is Value else _const_value(other)
        return Value(_ieee(_divide, self.data, other.data), (self, other), "div")

    @_value_rule("div")
    def _div_rule(node: Value, g: float) -> tuple[float, float]:
        a, b = node.operands
        # d(a/b) = da/b - a db/b²
        return _ieee(_divide, g, b.data), -g * _ieee(_divide, a.data, b.data ** 2)

    def __pow__(self, other: Any) -> Value:
        if type(other) is Value:
            return Value(_ieee(_power, self.data, other.data), (self, other), "pow")
        exponent = _real(other, "an exponent")
        return Value(_ieee(_power, self.data, exponent), (self,), "pow", exponent=exponent)

    @_value_rule("pow")
    def _pow_rule(node: Value, g: float) -> tuple[float, ...]:
        a = node.operands[0].data
        if len(node.operands) == 1:
            n = node.exponent
            # d(a^n)/da = n a^(n-1); a^0 is the constant 1, flat even at a = 0.
            return (0.0 if n == 0 else g * n * _ieee(_power, a, n - 1),)
        b = node.operands[1].data
        # d(a^b)/da = b a^(b-1) and d(a^b)/db = a^b ln a. At a = 0, b >= 0 the
        # result does not change with b, so that derivative is 0 (as in PyTorch).
        return (0.0 if b == 0 else g * b * _ieee(_power, a, b - 1),
                0.0 if a == 0 and b >= 0 else g * node.data * _ieee(_log, a))

    def __radd__(self, other: Any) -> Value:
        return _const_value(other) + self

    def __rsub__(self, other: Any) -> Value:
        return _const_value(other) - self

    def __rmul__(self, other: Any) -> Value:
        return _const_value(other) * self

    def __rtruediv__(self, other: Any) -> Value:
        return _const_value(other) / self

    def __rpow__(self, other: Any) -> Value:
        return _const_value(other) ** self

    def __neg__(self) -> Value:
        return Value(-self.data, (self,), "neg")

    @_value_rule("neg")
    def _neg_rule(node: Value, g: float) -> tuple[float]:
        return (-g,)

    def relu(self) -> Value:
        return Value(self.data if self.data > 0 else 0.0, (self,), "relu")

    @_value_rule("relu")
    def _relu_rule(node: Value, g: float) -> tuple[float]:
        # A gate: relu'(z) = 1 for z > 0, else 0 (a dead unit passes nothing).
        return (g if node.operands[0].data > 0 else 0.0,)

    def tanh(self) -> Value:
        return Value(math.tanh(self.data), (self,), "tanh")

    @_value_rule("tanh")
    def _tanh_rule(node: Value, g: float) -> tuple[float]:
        return (g * (1.0 - node.data ** 2),)  # tanh' = 1 - tanh²

    def exp(self) -> Value:
        return Value(_ieee(math.exp, self.data), (self,), "exp")

    @_value_rule("exp")
    def _exp_rule(node: Value, g: float) -> tuple[float]:
        return (g * node.data,)  # exp' = exp

    def log(self) -> Value:
        return Value(_ieee(_log, self.data), (self,), "log")

    @_value_rule("log")
    def _log_rule(node: Value, g: float) -> tuple[float]:
        return (_ieee(_divide, g, node.operands[0].data),)  # log' = 1/a

    def sqrt(self) -> Value:
        return Value(_ieee(math.sqrt, self.data), (self,), "sqrt")

    @_value_rule("sqrt")
    def _sqrt_rule(node: Value, g: float) -> tuple[float]:
        return (_ieee(_divide, g, 2.0 * node.data),)  # d√a/da = 1/(2√a)

    def sigmoid(self) -> Value:
        x = self.data
        # Two forms of 1/(1+e^-x), each exact where the other would overflow.
        s = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
        return Value(s, (self,), "sigmoid")

    @_value_rule("sigmoid")
    def _sigmoid_rule(node: Value, g: float) -> tuple[float]:
        return (g * node.data * (1.0 - node.data),)  # σ' = σ(1-σ)


def _const_value(number: Any) -> Value:
    if isinstance(number, Tensor):
        raise TypeError("cannot combine a Value with a Tensor; use one or the other")
    value = Value(_real(number, "an operand"))
    value.requires_grad = None  # a number written in the script: a constant
    return value


# ---------------------------------------------------------------- tensors


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

    __slots__ = ("axis", "keep", "rate")
    _no_grad = None  # PyTorch's .grad before backward

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
        self.axis = axis
        self.keep = self.rate = None  # dropout's mask and p
        self.requires_grad = requires_grad
        self._index = next(_creation_counter)
        self._sent = self._step = self._seed = self._sums = self._used = None
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

    @staticmethod
    def _sweep(order: list[Tensor], seed: np.ndarray, step: int) -> int:
        """Run the chain rule over ``order`` backwards; return the next step number."""
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
            node._step = step
            step += 1
        return step

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
        return Tensor(picked, _children=(self,), _op="getitem", axis=index)

    @_tensor_rule("getitem")
    def _getitem_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        # The picked entries get the gradient, the others 0; an entry picked
        # twice gets both (np.add.at adds at repeated indices).
        spread = np.zeros(node.operands[0].shape)
        np.add.at(spread, node.axis, g)
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

    def sum(self, axis: int | None = None) -> Tensor:
        self._check_axis(axis)
        return self._unary("sum", np.array(self.data.sum(axis=axis)), axis)

    @_tensor_rule("sum")
    def _sum_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        return (_spread(node, g),)  # every summed entry moves the sum one for one

    def mean(self, axis: int | None = None) -> Tensor:
        self._check_axis(axis)
        return self._unary("mean", np.array(self.data.mean(axis=axis)), axis)

    @_tensor_rule("mean")
    def _mean_rule(node: Tensor, g: np.ndarray) -> tuple[np.ndarray]:
        # The mean of k entries moves by 1/k for each.
        return (_spread(node, g) * (node.data.size / node.operands[0].data.size),)

    def _check_axis(self, axis: int | None) -> None:
        if axis is not None and not -self.ndim <= axis < self.ndim:
            raise EngineError(f"axis {axis} is out of range for shape {self.shape}")

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
    if node.axis is not None:
        g = np.expand_dims(g, node.axis)
    return np.broadcast_to(g, shape).copy()


# ---------------------------------------------------------------- reference

# Each op as the engine's operators and methods compute it, by op name.
_APPLY: dict[str, Callable[..., Node]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "pow": operator.pow, "neg": operator.neg, "matmul": operator.matmul,
    **{name: methodcaller(name) for name in ("relu", "tanh", "exp", "log", "sigmoid", "sqrt",
                                             "square", "sqnorm")},
    "sum": lambda a, axis=None: a.sum(axis), "mean": lambda a, axis=None: a.mean(axis),
    "transpose": lambda a: a.T,
}


def can_apply(op: str) -> bool:
    """Whether ``apply`` can compute ``op`` from its operands alone (an index cannot)."""
    return op in _APPLY


def apply(op: str, operands: Sequence[Node], exponent: float | None = None,
          axis: int | None = None) -> Node:
    """``op`` applied to engine nodes, as the engine's own operators compute it.

    The reference for graphs recorded by other engines: ``backpropviz check``
    rebuilds a hand-written engine's computation with it, op by op. ``axis``
    is a reduction's (sum, mean).
    """
    if op == "pow" and exponent is not None and len(operands) == 1:
        return operands[0] ** exponent
    function = _APPLY.get(op)
    if function is None:
        raise EngineError(f"the engine has no op {op!r} (its ops are {', '.join(sorted(_APPLY))})")
    if op == "add" and len(operands) > 2:  # a folded chain: a + b + c
        return functools.reduce(operator.add, operands)
    try:
        return function(*operands) if axis is None else function(*operands, axis=axis)
    except TypeError:
        raise EngineError(f"op {op!r} cannot take {len(operands)} operand(s)") from None


def local_gradients(node: Node, upstream: Any) -> tuple:
    """What ``node``'s backward rule sends to each operand when ``upstream`` arrives."""
    rules = _VALUE_RULES if isinstance(node, Value) else _TENSOR_RULES
    return rules[node.op](node, upstream)


# ---------------------------------------------------------------- checking


class GradcheckResult(NamedTuple):
    """Largest differences between backward's gradients and finite differences."""

    max_abs_error: float
    max_rel_error: float


def gradcheck(function: Callable[..., Node], inputs: Sequence[Node],
              eps: float = 1e-6) -> GradcheckResult:
    """Compare backward's gradients of ``function(*inputs)`` with central differences.

    ``inputs`` are leaf Values or Tensors; ``function`` builds a fresh graph
    from them and returns a scalar. The inputs' gradients are left as the one
    backward pass made them.
    """
    for node in inputs:
        if not isinstance(node, Node) or not node.is_leaf:
            raise EngineError("gradcheck's inputs must be leaf Values or Tensors")
        node._clear_grad()
    output = function(*inputs)
    if not isinstance(output, Node):
        raise EngineError(f"gradcheck's function must return a Value or Tensor, "
                          f"got {type(output).__name__}")
    output.backward()
    max_abs = max_rel = 0.0
    for node in inputs:
        original = node.data
        # An input the output does not depend on has gradient 0.
        grad = node.grad if node.has_grad else np.zeros(np.shape(original))
        analytic = np.array(grad, dtype=np.float64).ravel()
        flat = np.array(original, dtype=np.float64).ravel()
        for i in range(flat.size):
            estimates = []
            try:
                for step in (eps, -eps):
                    nudged = flat.copy()
                    nudged[i] += step
                    node.data = (float(nudged[0]) if isinstance(node, Value)
                                 else nudged.reshape(np.shape(original)))
                    estimates.append(_scalar(function(*inputs)))
            finally:
                node.data = original
            numeric = (estimates[0] - estimates[1]) / (2 * eps)
            error = abs(numeric - analytic[i])
            scale = max(abs(numeric), abs(analytic[i]), 1e-12)
            # np.maximum, not max: a nan error must show, not be skipped.
            max_abs = float(np.maximum(max_abs, error))
            max_rel = float(np.maximum(max_rel, error / scale))
    return GradcheckResult(max_abs, max_rel)


def _scalar(node: Node) -> float:
    return float(np.asarray(node.data).reshape(()))
