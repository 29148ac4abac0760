"""The backward pass as a reader follows it, read from the IR: its steps, the state after each,
and which zero gradients a dead ReLU caused."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .ir import IRError, operand_edges, result_of

__all__ = ["Step", "StepState", "backward_steps", "changed_between", "closing_step", "dead_masks",
           "fork_edges", "gradient_history", "loop_sums_known", "plain_constants",
           "start_grads", "state_at", "step_count"]


@dataclass(frozen=True)
class Step:
    """One op of the backward pass and what the reader knows after it.

    ``edges`` are the operand edges ``(operand, op, key)`` the op sent
    gradients along; ``grads`` maps every value id that has a gradient so far
    to its running sum (seeded roots first); ``updated`` are the values whose
    gradient this step changed, and ``accumulated`` those of them that already
    had one (a fork: ``+=``). A rolled loop's closing step (rolling.py) has no
    ``op``, ``result`` or ``edges``: the repetitions not drawn add their shares
    to the shared values (``updated``).
    """

    index: int
    op: Any
    result: Any
    edges: tuple
    grads: Mapping[Any, Any]
    updated: tuple
    accumulated: tuple


def backward_steps(G: nx.MultiDiGraph) -> list[Step]:
    """The backward pass replayed from the IR, one Step per op of backward_order.

    Each running sum is the number the producer recorded when the
    contribution arrived (the engine's, autograd's, another engine's), so the
    last one is the node's final gradient.
    """
    return [Step(index, op, None if op is None else result_of(G, op), tuple(edges),
                 dict(grads), tuple(dict.fromkeys(updated)), tuple(dict.fromkeys(accumulated)))
            for index, (op, edges, updated, accumulated, grads)
            in enumerate(_replay(G), start=1)]


def step_count(G: nx.MultiDiGraph) -> int:
    """How many backward steps ``G`` has: one per op of backward_order, and a rolled
    loop's closing step (rolling.py)."""
    return len(G.graph.get("backward_order", ())) + (closing_step(G) is not None)


def closing_step(G: nx.MultiDiGraph) -> int | None:
    """Which backward step (1 the first) is a rolled loop's closing step, if ``G`` has one:
    the step after the op it follows (``loop_rest_after``)."""
    order = G.graph.get("backward_order", ())
    after = G.graph.get("loop_rest_after")
    if not G.graph.get("loop_rest") or after not in order:
        return None
    return order.index(after) + 2


def gradient_history(G: nx.MultiDiGraph) -> dict[Any, list]:
    """Every gradient each value holds during the backward pass, in order.

    A value's list is its seed if it has one, then its running sum after each
    step that changed it (the numbers of ``backward_steps``); the last is its
    final gradient. Cheaper than ``backward_steps`` when only the numbers are
    needed: no copy of every gradient at every step.
    """
    history = {value: [seed] for value, seed in start_grads(G).items()}
    after = G.graph.get("loop_after", {})
    for op, _, updated, _, grads in _replay(G):
        # (a rolled loop's shared value, all repetitions in)
        for value in G._succ[op] if op is not None and after else ():
            if value in after and history.get(value, [None])[-1] is not after[value]:
                history.setdefault(value, []).append(after[value])
        for value in dict.fromkeys(updated) if len(updated) > 1 else updated:
            if value in history:
                history[value].append(grads[value])
            else:
                history[value] = [grads[value]]
    return history


def start_grads(G: nx.MultiDiGraph) -> dict[Any, Any]:
    """The gradients known before the first backward step: the seeds, and in a rolled
    loop (rolling.py) what the later repetitions had sent the shared weights already
    (not what reached one while the drawn repetition was swept: ``loop_arrived``)."""
    return {**G.graph.get("seeds", {}), **loop_sums_known(G)}


def loop_sums_known(G: nx.MultiDiGraph) -> dict[Any, Any]:
    """A rolled loop's shared values' gradients from the later repetitions, known when
    the drawn repetition's sweep begins (rolling.py)."""
    arrived = set(G.graph.get("loop_arrived", ()))
    return {value: grad for value, grad in G.graph.get("loop_before", {}).items()
            if value not in arrived}


def _replay(G: nx.MultiDiGraph) -> Iterator[tuple[Any, list, list, list, dict]]:
    """The backward pass op by op, as the running sums changed.

    Yields each op of backward_order with its operand edges, the values it
    updated, those of them it accumulated into, and the running sums after it
    (one dict, updated in place: copy it to keep it). The sums are the ones
    the producer recorded on each edge (``running``: the operand's gradient right
    after the edge's contribution arrived); nothing is added up here. A rolled
    loop's closing step comes as op None after the op it follows: each shared
    value's gradient the engine's once the repetitions not drawn sent theirs.
    """
    grads: dict[Any, Any] = start_grads(G)
    # A rolled loop's shared values computed before the loop: by the time backward
    # reaches the op that made one, every repetition has sent its share (rolling.py).
    after = G.graph.get("loop_after", {})
    rest = G.graph.get("loop_rest") or {}
    closing = G.graph.get("loop_rest_after") if rest else None
    pred = G._pred
    for op in G.graph["backward_order"]:
        for value in G._succ[op] if after else ():
            if value in after:
                grads[value] = after[value]
        edges = operand_edges(G, op)
        updated, accumulated = [], []
        operands = pred[op]
        for u, _, k in edges:
            edge = operands[u][k]
            if edge["grad"] is None:
                continue
            if "running" not in edge:
                raise IRError(f"edge {u!r} -> {op!r} carries a gradient but no running sum "
                              "('running'): the IR was made without them")
            if u in grads:
                accumulated.append(u)
            grads[u] = edge["running"]
            updated.append(u)
        yield op, edges, updated, accumulated, grads
        if op == closing:
            accumulated = [value for value in rest if value in grads]
            grads.update(rest)
            yield None, [], list(rest), accumulated, grads


@dataclass(frozen=True)
class StepState:
    """What one picture shows: gradients so far, edge contributions, the current op."""

    grads: Mapping[Any, Any]  # value id -> gradient shown (absent: not computed)
    processed: frozenset  # operand edges (u, v, key) whose contribution has been sent
    current: Any  # the op of this backward step, or None
    current_edges: frozenset
    updated: frozenset  # values whose gradient this step changed


def state_at(G: nx.MultiDiGraph, step: int | None = None,
             replay: Sequence[Step] | None = None) -> StepState:
    """The gradients and edges known after ``step`` backward steps (None: all).

    ``replay`` is ``backward_steps(G)`` if the caller has it already.
    """
    order = G.graph["backward_order"]
    count = step_count(G)
    if step is None:
        grads = {v: attrs["grad"] for v, attrs in G._node.items()  # (networkx's own dicts)
                 if attrs["kind"] == "value" and attrs.get("grad") is not None}
        processed = frozenset({(u, op, k) for op in order for u, keyed in G._pred[op].items()
                               for k, edge in keyed.items() if edge.get("arg") is not None})
        return StepState(grads, processed, None, frozenset(), frozenset())
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= count:
        raise IRError(f"step {step!r} is out of range (must be an int in 0..{count})")
    if step == 0:
        return StepState(start_grads(G), frozenset(), None, frozenset(), frozenset())
    if replay is None:
        replay = backward_steps(G)
    now = replay[step - 1]
    processed = frozenset(edge for done in replay[:step] for edge in done.edges)
    return StepState(now.grads, processed, now.op, frozenset(now.edges), frozenset(now.updated))


def changed_between(G: nx.MultiDiGraph, before: StepState,
                    after: StepState) -> tuple[list, set]:
    """The nodes and edges a picture of ``after`` may draw otherwise than one of
    ``before``: the ops current in either, the edges sent or highlighted in one of
    them and those ops' results, and the values whose gradient, mark or sent edges
    changed. Everything else is drawn alike in both (dot.Writer's looks)."""
    current = [op for op in dict.fromkeys((before.current, after.current)) if op is not None]
    sent = before.processed ^ after.processed
    edges = set(sent | (before.current_edges ^ after.current_edges))
    edges.update((op, v, k) for op in current for v, keyed in G._succ[op].items()
                 for k in keyed)
    old, new = before.grads, after.grads
    values = {value for value, grad in new.items() if value not in old or old[value] is not grad}
    values.update(value for value in old if value not in new)
    values.update(before.updated ^ after.updated)
    values.update(u for u, _, _ in sent)
    return [*current, *values], edges


def dead_masks(G: nx.MultiDiGraph) -> tuple[dict, dict]:
    """Which zero gradient entries a dead ReLU caused, per value and per operand edge.

    A ReLU with z <= 0 passes back 0 whatever arrives (its derivative is 0
    there); that zero then flows further back. An entry of a contribution is
    "dead" when it is 0 and every entry of the result's gradient it depends
    on is dead (or, at a ReLU, the unit itself is dead); a value's gradient
    entry is dead when it is 0 and every contribution to it is dead there.
    Returns ``(values, edges)``: boolean arrays keyed by value id and by
    ``(u, v, key)``, only for values and edges with at least one dead entry.
    """
    nodes = G._node  # (networkx's own dict, read only)
    if not any(_any(attrs["dead"]) for attrs in nodes.values()
               if attrs.get("dead") is not None):
        return {}, {}
    contributions: dict[Any, list] = {}
    edge_mask: dict[tuple, Any] = {}
    value_mask: dict[Any, Any] = {}
    seeds = G.graph.get("seeds", {})

    # Scalars (the common case, graphs of Values) use plain bools; arrays
    # use boolean arrays of their shape.
    def mask_of(value: Any) -> Any:
        grad = nodes[value]["grad"]
        masks = contributions.get(value)
        if grad is None or value in seeds or not masks:
            return False if type(grad) is float else np.zeros(nodes[value]["shape"], bool)
        if type(grad) is float:
            return grad == 0 and all(masks)
        dead = np.asarray(grad, dtype=np.float64) == 0
        for mask in masks:
            dead = dead & mask
        return dead

    for op in G.graph["backward_order"]:
        result = result_of(G, op)
        upstream = value_mask[result] = mask_of(result)
        attrs = nodes[op]
        for u, edges in G._pred[op].items():
            for k, edge in edges.items():
                contribution = edge.get("grad")
                if contribution is None:
                    continue
                if type(contribution) is float and type(upstream) is bool:
                    # A gating op (a ReLU) carries "dead": where it blocks the gradient.
                    mask: Any = contribution == 0 and (attrs.get("dead") is True or upstream)
                else:
                    zero = np.asarray(contribution, dtype=np.float64) == 0
                    mask = zero & _dead_through(attrs, edge["arg"], np.asarray(upstream),
                                                zero.shape)
                edge_mask[(u, op, k)] = mask
                if u in contributions:
                    contributions[u].append(mask)
                else:
                    contributions[u] = [mask]
    for value, attrs in nodes.items():
        if attrs["kind"] == "value" and value not in value_mask:
            value_mask[value] = mask_of(value)
    return _kept(value_mask), _kept(edge_mask)


# A dead scalar's mask: one array for all of them, read only.
_DEAD_SCALAR = np.ones((), dtype=bool)
_DEAD_SCALAR.flags.writeable = False


def _kept(masks: dict) -> dict:
    """The masks with a dead entry, as arrays (a scalar's plain bool as _DEAD_SCALAR)."""
    return {key: _DEAD_SCALAR if mask is True else np.asarray(mask)
            for key, mask in masks.items() if _any(mask)}


def _any(mask: Any) -> bool:
    """Whether any entry of a mask is set; a plain bool (a scalar's) without numpy."""
    return mask if type(mask) is bool else bool(np.any(mask))


def _dead_through(attrs: Mapping, arg: int, upstream: np.ndarray, shape: tuple) -> np.ndarray:
    """Which entries of operand ``arg``'s contribution depend only on dead upstream entries."""
    everywhere = np.full(shape, bool(upstream.all()) if upstream.size else False)
    if "dead" in attrs:  # a gate: dead where the op blocks it, or where nothing arrives
        gate = np.asarray(attrs["dead"], dtype=bool)
        if gate.shape == upstream.shape == shape:
            return gate | upstream
        return everywhere
    flow = ops.get(attrs["op"]).flow
    if flow == ops.ROWS_COLUMNS:
        return _dead_through_matmul(arg, upstream, shape, everywhere)
    if flow == ops.LINEAR:
        return _dead_through_linear(arg, upstream, shape, everywhere)
    if flow == ops.WHOLE:
        return everywhere
    if upstream.shape == shape:  # elementwise: entry i depends on result entry i
        return upstream.copy()
    return everywhere


def _dead_through_matmul(arg: int, upstream: np.ndarray, shape: tuple,
                         everywhere: np.ndarray) -> np.ndarray:
    # C = A @ B. For A (m, n): dA[i, j] = sum_k dC[i, k] B[j, k], so row i of
    # dA depends on row i of dC only. For B (n, p): dB[j, k] = sum_i A[i, j]
    # dC[i, k], so column k of dB depends on column k of dC only.
    if arg == 0 and len(shape) == 2:
        rows = upstream.reshape(shape[0], -1).all(axis=1)
        return np.repeat(rows[:, None], shape[1], axis=1)
    if arg == 1 and len(shape) == 2:
        cols = upstream.reshape(-1, shape[1]).all(axis=0)
        return np.repeat(cols[None, :], shape[0], axis=0)
    return everywhere


def _dead_through_linear(arg: int, upstream: np.ndarray, shape: tuple,
                         everywhere: np.ndarray) -> np.ndarray:
    # y = x Wᵀ + b, x (..., n), W (m, n), b (m,), y (..., m). dx[r, j] = Σ_o dy[r, o] W[o, j]:
    # row r of dx from row r of dy. dW[o, j] = Σ_r dy[r, o] x[r, j] and db[o] = Σ_r dy[r, o]:
    # row o of dW and entry o of db from column o of dy.
    if upstream.ndim == 0 or not shape:
        return everywhere
    outputs = upstream.shape[-1]
    columns = upstream.reshape(-1, outputs).all(axis=0)
    if arg == 0 and len(shape) >= 2 and upstream.ndim >= 2 \
            and shape[:-1] == upstream.shape[:-1]:
        rows = upstream.all(axis=-1)
        return np.broadcast_to(rows[..., None], shape).copy()
    if arg == 1 and len(shape) == 2 and shape[0] == outputs:
        return np.repeat(columns[:, None], shape[1], axis=1)
    if arg == 2 and shape == (outputs,):
        return columns.copy()
    return everywhere


def plain_constants(G: nx.MultiDiGraph, show_constants: bool) -> set:
    """The constants drawn without their gradient and saved mark (all, unless shown)."""
    if show_constants:
        return set()
    return {node for node, attrs in G._node.items() if attrs.get("role") == "const"}


def fork_edges(G: nx.MultiDiGraph, plain: set) -> set[tuple[Any, Any, Any]]:
    """The edges of forks: a value (not in ``plain``) that sends gradients back
    along two or more edges. Each shows its contribution; the value their sum."""
    forks: set[tuple[Any, Any, Any]] = set()
    for u, targets in G._succ.items():  # (networkx's own dicts, read only)
        # (a node with one edge out, most values and every op, is no fork)
        if u in plain or sum(map(len, targets.values())) < 2:
            continue
        sent = [(u, v, k) for v, keyed in targets.items() for k, attrs in keyed.items()
                if attrs.get("grad") is not None]
        if len(sent) >= 2:
            forks.update(sent)
    return forks
