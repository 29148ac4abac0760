"""A small autograd engine that records its graph and every step of backward."""

# Its parts live by idea: node (what Value and Tensor share, the topological order,
# the rules' registry), value (scalars), tensor (arrays), gradient_check (finite
# differences). Here are the names they export, and the engine as the reference
# for other engines' graphs (apply).

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from operator import methodcaller
from typing import Any

from .gradient_check import GradcheckResult, gradcheck
from .node import (
    _TENSOR_RULES,
    _VALUE_RULES,
    EngineError,
    Node,
    backward_done_listeners,
    backward_listeners,
    saved_for_backward,
    topological_order,
)
from .tensor import Tensor
from .value import Value

__all__ = [
    "EngineError",
    "GradcheckResult",
    "Node",
    "Tensor",
    "Value",
    "apply",
    "backward_done_listeners",
    "backward_listeners",
    "can_apply",
    "gradcheck",
    "local_gradients",
    "saved_for_backward",
    "topological_order",
]


# ---------------------------------------------------------------- reference

# Each op as the engine's operators and methods compute it, by op name.
_APPLY: dict[str, Callable[..., Node]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "pow": operator.pow, "neg": operator.neg, "matmul": operator.matmul,
    **{name: methodcaller(name) for name in ("relu", "tanh", "exp", "log", "sigmoid", "sqrt",
                                             "square", "sqnorm")},
    "sum": lambda a, **along: a.sum(**along), "mean": lambda a, **along: a.mean(**along),
    "transpose": lambda a: a.T,
}


def can_apply(op: str) -> bool:
    """Whether ``apply`` can compute ``op`` from its operands alone (an index cannot)."""
    return op in _APPLY


def apply(op: str, operands: Sequence[Node], exponent: float | None = None,
          axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Node:
    """``op`` applied to engine nodes, as the engine's own operators compute it.

    The reference for graphs recorded by other engines: ``backpropviz check``
    rebuilds a hand-written engine's computation with it, op by op. ``axis``
    and ``keepdims`` are a reduction's (sum, mean).
    """
    if op == "pow" and exponent is not None and len(operands) == 1:
        return operands[0] ** exponent
    function = _APPLY.get(op)
    if function is None:
        raise EngineError(f"the engine has no op {op!r} (its ops are {', '.join(sorted(_APPLY))})")
    if op == "add" and len(operands) > 2:  # a folded chain: a + b + c
        return functools.reduce(operator.add, operands)
    try:
        if axis is None and not keepdims:
            return function(*operands)
        return function(*operands, axis=axis, keepdims=keepdims)
    except TypeError:
        raise EngineError(f"op {op!r} cannot take {len(operands)} operand(s)") from None


def local_gradients(node: Node, upstream: Any) -> tuple:
    """What ``node``'s backward rule sends to each operand when ``upstream`` arrives."""
    rules = _VALUE_RULES if isinstance(node, Value) else _TENSOR_RULES
    return rules[node.op](node, upstream)
