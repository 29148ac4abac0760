"""The engine's core: a recorded node, the topological order, the backward rules' registry."""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any

import numpy as np

from . import ops
from .errors import BackpropvizError

__all__ = ["EngineError", "Node", "backward_done_listeners", "backward_listeners",
           "saved_for_backward", "topological_order"]


class EngineError(BackpropvizError, ValueError):
    """A computation the engine cannot perform, explained in one sentence."""


# Every node gets the next number when it is created. Operands always exist
# before their results, so sorting a graph by this number is a topological
# order, and it is the order in which the script computed things.
_creation_counter = itertools.count()
_creation_number = attrgetter("_index")


class Node:
    """What Value and Tensor share: the recorded graph and the backward record.

    ``operands`` is an ordered tuple, so ``a * a`` keeps two edges (a Value
    keeps its operands in two slots and gives them as the tuple). After a
    backward pass, ``_sent[i]`` is the gradient this node sent back to
    ``operands[i]`` in the last pass, ``_sums[i]`` the gradient
    ``operands[i]`` held right after it arrived (the running sum, as the
    engine added it, earlier passes' gradients included), ``_pass`` numbers
    the last pass that processed it (each pass processes its ops in reverse
    creation order; a Value's pass writes its number as it finds the node),
    and ``_passes`` counts the passes that reached the node.
    A leaf's ``_used`` is its data as the last pass found it: what the
    forward pass used, even after an update such as ``w.data -= lr * w.grad``.
    (Value keeps ``_sent`` and ``_sums`` in float slots, Tensor as tuples.)
    """

    __slots__ = (
        "_group", "_index", "_pass", "_passes", "_seed", "_used",
        "data", "exponent", "grad", "label", "op", "requires_grad",
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
        self._pass = self._seed = self._used = None
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
        self._seed = seed if self._seed is None else self._seed + seed
        Node._passes_run += 1
        try:
            self._sweep(seed, Node._passes_run)
        except KeyError as error:  # only a rule lookup raises it
            known = ", ".join(sorted(self._rules))
            raise EngineError(
                f"op {error.args[0]!r} has no backward rule (the ops are {known}); "
                "build nodes with operators and methods, not by passing an op name") from None
        for listener in backward_done_listeners:
            listener(self)

    # How many backward passes have run: ``_pass`` numbers them, so that with
    # reverse creation order within a pass the tape orders every op processed.
    _passes_run = 0


# Told of every backward() call, with its root, before the pass runs: how the
# script front end finds a graph built inside a function (watch.py).
backward_listeners: list[Callable[[Any], None]] = []
# Told of every backward() call once the pass is over, with its root: how a training
# run is recorded pass by pass (train_record.py).
backward_done_listeners: list[Callable[[Any], None]] = []


def topological_order(roots: Iterable[Node]) -> list[Node]:
    """Every node the roots depend on, operands before results (no recursion)."""
    stack = list(dict.fromkeys(roots))
    met = set(stack)
    found = []
    pop, push, keep, meet = stack.pop, stack.append, found.append, met.add
    while stack:
        node = pop()
        # Kept as it leaves the stack, not as it is met: then the search finds a
        # node's operands after it, mostly newest first, and the sort below takes
        # those stretches whole (reversing them) instead of merging element by element.
        keep(node)
        for operand in node.operands:
            if operand not in met:
                meet(operand)
                push(operand)
    found.sort(key=_creation_number)
    return found


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


