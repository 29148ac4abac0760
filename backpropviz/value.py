"""Value: a scalar that records how it was computed (micrograd-compatible), op by op."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import groups as _groups
from .node import (
    _VALUE_RULES,
    EngineError,
    Node,
    _creation_counter,
    _creation_number,
    _real,
    _value_rule,
)

__all__ = ["Value"]


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

# The .grad of every Value no pass has reached: one object, so a search can
# tell it is 0.0 by identity, without looking at its bits.
_UNTOUCHED = 0.0


class Value(Node):
    """A scalar that remembers how it was computed (micrograd-compatible).

    ``Value(2.0, label="a")``; ``requires_grad=True`` marks a parameter, which
    drawings fill light blue. Gradients are computed for every node either way.
    """

    # The operands in order: ``_a``, and ``_b`` for a binary op (None where there are
    # fewer). Two slots rather than a tuple: one object fewer for each op to make, keep
    # and free. Then the tape of the last pass, per operand edge: what was sent, and
    # the sum it made.
    __slots__ = ("_a", "_b", "_sent0", "_sent1", "_sum0", "_sum1")
    _no_grad = _UNTOUCHED  # micrograd's .grad before backward
    _rules = _VALUE_RULES

    def __init__(self, data: Any, _children: Sequence[Value] = (), _op: str = "",
                 label: str | None = None, requires_grad: bool = False,
                 exponent: float | None = None) -> None:
        operands = tuple(_children)
        if len(operands) > 2:
            raise EngineError(f"a Value has at most two operands, got {len(operands)}")
        a, b = (*operands, None, None)[:2]
        _result(data if type(data) is float else _real(data, "Value data"), _op or None,
                a, b, exponent, self)
        self.label = label or None
        self.requires_grad = requires_grad

    def __repr__(self) -> str:
        name = f", label={self.label!r}" if self.label else ""
        return f"Value(data={self.data}, grad={self.grad}{name})"

    @property
    def shape(self) -> tuple[()]:
        return ()

    @property
    def operands(self) -> tuple[Value, ...]:
        """The operands, in order (none for a leaf)."""
        if self._a is None:
            return ()
        return (self._a,) if self._b is None else (self._a, self._b)

    @property
    def _sent(self) -> tuple[float, ...] | None:
        """The gradient sent back along each operand edge in the last pass (None: none)."""
        if self._pass is None:
            return None
        return (self._sent0,) if self._b is None else (self._sent0, self._sent1)

    @property
    def _sums(self) -> tuple[float, ...] | None:
        """Each operand's gradient right after this op's share arrived (None: no pass)."""
        if self._pass is None:
            return None
        return (self._sum0,) if self._b is None else (self._sum0, self._sum1)

    def _seed_for(self, gradient: Any) -> float:
        return 1.0 if gradient is None else _real(gradient, "gradient")

    def _sweep(self, seed: float, number: int) -> None:
        """Run the chain rule from this root backwards, as pass ``number``.

        Each gradient is summed in ``.grad`` as its contributions arrive. A
        ``.grad`` that holds something already (earlier passes' gradients,
        or -0.0), and the root's, to which the seed is added, start this pass
        from zero and get what they held added back afterwards, each sum as
        the engine adds it.
        """
        order, holding = _reached(self, number)
        for node in holding:
            node.grad = 0.0
        _sweep_from_zero(order, seed, number)
        _add_earlier_passes(order, holding, seed)

    # ------------------------------------------------------------ ops
    # Each op: its forward computation, then its backward rule, which takes the
    # result node and the gradient g arriving from downstream and returns the
    # contribution for each operand: the local derivative times g.

    def __add__(self, other: Any) -> Value:
        other = other if type(other) is Value else _const_value(other)
        return _result(self.data + other.data, "add", self, other)

    @_value_rule("add")
    def _add_rule(node: Value, g: float) -> tuple[float, float]:
        return g, g  # d(a+b) = da + db

    def __sub__(self, other: Any) -> Value:
        other = other if type(other) is Value else _const_value(other)
        return _result(self.data - other.data, "sub", self, other)

    @_value_rule("sub")
    def _sub_rule(node: Value, g: float) -> tuple[float, float]:
        return g, -g  # d(a-b) = da - db

    def __mul__(self, other: Any) -> Value:
        other = other if type(other) is Value else _const_value(other)
        return _result(self.data * other.data, "mul", self, other)

    @_value_rule("mul")
    def _mul_rule(node: Value, g: float) -> tuple[float, float]:
        return g * node._b.data, g * node._a.data  # d(ab)/da = b, d(ab)/db = a

    def __truediv__(self, other: Any) -> Value:
        other = other if type(other) is Value else _const_value(other)
        return _result(_ieee(_divide, self.data, other.data), "div", self, other)

    @_value_rule("div")
    def _div_rule(node: Value, g: float) -> tuple[float, float]:
        a, b = node._a.data, node._b.data
        # d(a/b) = da/b - a db/b². Where b² leaves the floats (|b| > 1.3e154 overflows,
        # |b| < 1e-162 is 0), a/b/b is the same number, as PyTorch computes it.
        try:
            slope = a / b ** 2
        except (OverflowError, ZeroDivisionError):
            slope = _ieee(_divide, _ieee(_divide, a, b), b)
        return _ieee(_divide, g, b), -g * slope

    def __pow__(self, other: Any) -> Value:
        if type(other) is Value:
            return _result(_ieee(_power, self.data, other.data), "pow", self, other)
        exponent = _real(other, "an exponent")
        return _result(_ieee(_power, self.data, exponent), "pow", self, None, exponent)

    @_value_rule("pow")
    def _pow_rule(node: Value, g: float) -> tuple[float, ...]:
        a = node._a.data
        if node._b is None:
            n = node.exponent
            # d(a^n)/da = n a^(n-1); a^0 is the constant 1, flat even at a = 0.
            return (0.0 if n == 0 else g * n * _ieee(_power, a, n - 1),)
        b = node._b.data
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
        return _result(-self.data, "neg", self)

    @_value_rule("neg")
    def _neg_rule(node: Value, g: float) -> tuple[float]:
        return (-g,)

    def relu(self) -> Value:
        return _result(self.data if self.data > 0 else 0.0, "relu", self)

    @_value_rule("relu")
    def _relu_rule(node: Value, g: float) -> tuple[float]:
        # A gate: relu'(z) = 1 for z > 0, else 0 (a dead unit passes nothing).
        return (g if node._a.data > 0 else 0.0,)

    def tanh(self) -> Value:
        return _result(math.tanh(self.data), "tanh", self)

    @_value_rule("tanh")
    def _tanh_rule(node: Value, g: float) -> tuple[float]:
        return (g * (1.0 - node.data ** 2),)  # tanh' = 1 - tanh²

    def exp(self) -> Value:
        return _result(_ieee(math.exp, self.data), "exp", self)

    @_value_rule("exp")
    def _exp_rule(node: Value, g: float) -> tuple[float]:
        return (g * node.data,)  # exp' = exp

    def log(self) -> Value:
        return _result(_ieee(_log, self.data), "log", self)

    @_value_rule("log")
    def _log_rule(node: Value, g: float) -> tuple[float]:
        return (_ieee(_divide, g, node._a.data),)  # log' = 1/a

    def sqrt(self) -> Value:
        return _result(_ieee(math.sqrt, self.data), "sqrt", self)

    @_value_rule("sqrt")
    def _sqrt_rule(node: Value, g: float) -> tuple[float]:
        return (_ieee(_divide, g, 2.0 * node.data),)  # d√a/da = 1/(2√a)

    def sigmoid(self) -> Value:
        x = self.data
        # Two forms of 1/(1+e^-x), each exact where the other would overflow.
        s = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
        return _result(s, "sigmoid", self)

    @_value_rule("sigmoid")
    def _sigmoid_rule(node: Value, g: float) -> tuple[float]:
        return (g * node.data * (1.0 - node.data),)  # σ' = σ(1-σ)


def _reached(root: Value, number: int) -> tuple[list[Value], dict[Value, tuple[Any, int]]]:
    """Everything ``root`` depends on, in reverse creation order (root first), and
    those whose .grad holds something, each with its .grad and pass count.

    The search marks each node it meets with the pass's ``number``, in ``_pass``:
    so an op has it when the sweep processes it, with no write of its own there.

    The root holds what the seed is added to; the others hold something if their
    .grad has a float64 bit set (+0.0, or 0, is what a sum from 0.0 starts from, bit
    for bit; -0.0 is not, since -0.0 + -0.0 is -0.0). The search is
    ``topological_order``'s, looking at each .grad as the node leaves the stack.
    """
    root._pass = number
    found = []
    holding = {root: (root.grad, root._passes)}
    stack = [root]
    pop, push, keep = stack.pop, stack.append, found.append
    while stack:
        node = pop()
        keep(node)  # as it leaves the stack, as topological_order keeps it
        grad = node.grad
        if grad is not _UNTOUCHED and (grad != 0.0 or math.copysign(1.0, grad) < 0.0):
            holding[node] = (grad, node._passes)
        # Spelled out per operand (no loop): this search is a fifth of backward's time.
        a = node._a
        if a is None:
            continue
        if a._pass is not number:
            a._pass = number
            push(a)
        b = node._b
        if b is not None and b._pass is not number:
            b._pass = number
            push(b)
    found.sort(key=_creation_number, reverse=True)
    return found, holding


def _sweep_from_zero(order: list[Value], seed: float, number: int) -> None:
    """The chain rule over ``order`` (reverse creation order), every ``.grad`` starting at 0.

    Reverse creation order: a node's gradient is complete before its rule
    runs, because everything that used it was created after it. So ``.grad``
    is the gradient the rule takes, and where it forks each contribution is
    added to it, the running sum recorded as it is made. The root's ``.grad``
    is left at the seed, for the caller to add to what it held before.

    Each op has this pass's ``number`` in ``_pass`` already, from the search;
    a leaf's is cleared (no pass processes a leaf's rule), and so is every
    node's from an op without a rule on, where the pass stops.
    """
    order[0].grad = seed
    rules = _VALUE_RULES
    try:
        for node in order:
            upstream = node.grad
            # .grad holds this pass alone: a node that earlier passes reached had
            # its gradient reset since (w.grad = 0), and is counted anew. A NaN,
            # unequal to itself, cannot tell, and counts on.
            node._passes = 1 if upstream == upstream else node._passes + 1
            op = node.op
            if op is None:
                node._used = node.data  # as the forward pass used it, before any update
                node._pass = None
                continue
            contributions = rules[op](node, upstream)
            # Spelled out per arity, in slots rather than tuples: this is the
            # engine's hot loop, and each object it keeps is one more for the
            # garbage collector to look at.
            a, b = node._a, node._b
            if b is None:
                sent0, = contributions
                a.grad = node._sum0 = a.grad + sent0
                node._sent0 = sent0
            else:
                sent0, sent1 = contributions
                a.grad = node._sum0 = a.grad + sent0
                b.grad = node._sum1 = b.grad + sent1
                node._sent0 = sent0
                node._sent1 = sent1
    except KeyError:  # no rule for this op: backward() says so
        for unprocessed in order[order.index(node):]:
            unprocessed._pass = None
        raise


def _add_earlier_passes(order: list[Value], holding: dict[Value, tuple[Any, int]],
                        seed: float) -> None:
    """After a pass swept from zero: ``.grad`` as the engine holds it.

    ``holding`` maps each node that did not start from zero to its ``.grad``
    and pass count before the pass. Its ``.grad`` is what it held, then the
    seed or each contribution added in the order the pass sent them, so the
    sums and the running sums recorded are those of adding straight into
    ``.grad``. It counts one pass more unless its ``.grad`` holds this pass
    alone (it was reset since: w.grad = 0).
    """
    # The nodes that hold something are marked in ``_passes`` (faster to ask than the
    # dict), which is counted anew for each of them at the end.
    holds = object()
    this_pass = {}
    for node, (grad, _) in holding.items():
        this_pass[node] = node.grad
        node.grad = grad
        node._passes = holds
    order[0].grad += seed
    if len(holding) > 1:  # nothing is sent to the root, but to the others
        for node in order:
            # Spelled out per arity, as in the sweep: every op is looked at.
            a, b = node._a, node._b
            if a is not None and a._passes is holds:
                a.grad = node._sum0 = a.grad + node._sent0
            if b is not None and b._passes is holds:
                b.grad = node._sum1 = b.grad + node._sent1
    for node, (_, count) in holding.items():
        node._passes = 1 if count and node.grad == this_pass[node] else count + 1


_new = object.__new__


def _result(data: float, op: str | None, a: Value | None, b: Value | None = None,
            exponent: float | None = None, node: Value | None = None) -> Value:
    """An op's result, from operand ``a`` (and ``b``), every slot set; or ``node``'s
    slots, for ``__init__``.

    An op makes its result here, without the class call and ``__init__``'s
    checks (its data is a float, its operands Values): the forward pass
    makes one per op, and this is a third of its time. The tape's slots stay
    empty until a pass fills them (``_pass`` says whether one did).
    """
    if node is None:
        node = _new(Value)
    node.data = data
    node.grad = _UNTOUCHED
    node.label = None
    node.op = op
    node._a = a
    node._b = b
    node.exponent = exponent
    node.requires_grad = False
    node._index = next(_creation_counter)
    node._pass = node._seed = node._used = None
    node._passes = 0
    # The groups (with group(...)) it was made in; a flag, cheaper than the call, when
    # no group was ever opened.
    node._group = _groups.current() if _groups.ever_opened else ()
    return node


def _const_value(number: Any) -> Value:
    if isinstance(number, Node) and not isinstance(number, Value):  # a Tensor
        raise TypeError("cannot combine a Value with a Tensor; use one or the other")
    value = Value(_real(number, "an operand"))
    value.requires_grad = None  # a number written in the script: a constant
    return value
