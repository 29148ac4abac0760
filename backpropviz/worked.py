"""A worked caption's numbers checked against the reference engine: what its rule sends
from a step's recorded numbers (what an op gives, for the forward pass's), or from those
numbers as the caption writes them.

Never drawn: it tells a caption whether the engine did what the rule says, and
whether its arithmetic holds exactly as written (``=``) or only at the precision
shown (``≈``: ``(−1.2) · 0.6127 ≈ −0.7353``, the engine's numbers having more digits).
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .engine import EngineError, Tensor, Value, apply, can_apply, local_gradients
from .formatting import display_number, number_text
from .ir import operand_edges
from .steps import backward_steps

__all__ = ["EXTRA_DIGITS", "RESULT_ENTRIES", "as_written", "digits_for", "exactly",
           "not_the_chain_rules", "off_the_rule", "out_of_order", "plus", "rule_shares", "same",
           "sum_line", "written_exactly", "wrong_seed", "zero"]

# Past this many ops a graph is not checked against the rule (a hand-written engine's
# graph is small; our engine and autograd follow the rule anyway).
CHECKED_OPS = 300


def as_written(x: Any, precision: int) -> Any:
    """A recorded number (or array) as a caption writes it, read back: rounded."""
    def read(v: float) -> float:
        return float(display_number(v, precision).replace("\u2212", "-"))
    if np.ndim(x) == 0:
        return read(float(x))
    return np.vectorize(read, otypes=[np.float64])(np.asarray(x, dtype=np.float64))


def written_entries(x: Any) -> int:
    """How many entries a worked line would write (0 for none); an array laid out in three
    axes or more (formatting.drawn_shape) is read on the picture, as if too large to write."""
    flat = all(n == 1 for n in np.shape(x)[2:])
    return 0 if x is None else int(np.size(x)) if flat else 1 << 30


def written_exactly(x: Any, precision: int) -> bool:
    """Whether a number (or every entry of an array) reads back as itself as written."""
    return exactly(as_written(x, precision), np.asarray(x, dtype=np.float64))


def rule_shares(G: nx.MultiDiGraph, step: Any, upstream: Any,
                precision: int | None = None) -> list | None:
    """What the op's rule, as the reference engine has it, sends each operand when
    ``upstream`` arrives, from the operands' and the result's recorded numbers (with
    ``precision``: as written with that many digits); None where the reference cannot
    say (an op it does not have, a group, a folded chain of operands of several shapes, an
    odd shape)."""
    attrs = G.nodes[step.op]
    data = [G.nodes[u]["data"] for u, _, _ in step.edges]
    if upstream is None or not can_apply(attrs["op"]):
        return None
    if precision is not None:
        data = [as_written(x, precision) for x in data]
        upstream = as_written(upstream, precision)
    scalar = all(np.ndim(x) == 0 for x in (*data, upstream))
    if len(data) > 2 and set(ops.get(attrs["op"]).form(len(data)).numbers) == {"$g"}:
        # (a folded chain of an op that passes the gradient on, +: each operand gets it)
        shape = np.shape(G.nodes[step.result]["data"])
        if all(np.shape(x) == shape for x in (*data, upstream)):
            g = float(upstream) if scalar else np.asarray(upstream, np.float64)
            return [g] * len(data)
        return None
    try:
        operands = [Value(float(x)) if scalar else Tensor(np.asarray(x, dtype=np.float64))
                    for x in data]
        result = apply(attrs["op"], operands, attrs.get("exponent"), attrs.get("axis"),
                       attrs.get("keepdims", False))
        recorded, shape = G.nodes[step.result]["data"], np.shape(result.data)
        if len(result.operands) != len(operands) or _squeezed(shape) != _squeezed(
                np.shape(recorded)):  # (an axis the IR does not hold: x.mean(1) taken whole)
            return None  # (a mean that kept its axis, 2×1 for 2, is the same numbers)
        if precision is not None:  # (a rule that reads its result reads it as written)
            written = as_written(recorded, precision)
            result.data = float(written) if scalar else np.reshape(written, shape)
        g = float(upstream) if scalar else np.reshape(np.asarray(upstream, np.float64), shape)
        return list(local_gradients(result, g))
    except (EngineError, TypeError, ValueError, KeyError, ArithmeticError):
        return None


def forward_result(G: nx.MultiDiGraph, op: Any, precision: int | None = None) -> Any:
    """What ``op`` gives, as the reference engine computes it, from its operands' recorded
    numbers (with ``precision``: as written with that many digits), in the shape of the
    result recorded; None where the reference cannot say (an op it does not have, a
    group, an axis the IR does not hold)."""
    attrs = G.nodes[op]
    if not can_apply(attrs["op"]):
        return None
    data = [G.nodes[u]["data"] for u, _, _ in operand_edges(G, op)]
    if any(x is None for x in data):
        return None
    if precision is not None:
        data = [as_written(x, precision) for x in data]
    scalar = all(np.ndim(x) == 0 for x in data)
    recorded = G.nodes[next(iter(G.successors(op)))].get("data")
    try:
        operands = [Value(float(x)) if scalar else Tensor(np.asarray(x, dtype=np.float64))
                    for x in data]
        result = apply(attrs["op"], operands, attrs.get("exponent"), attrs.get("axis"),
                       attrs.get("keepdims", False))
    except (EngineError, TypeError, ValueError, KeyError, ArithmeticError):
        return None
    if recorded is None or _squeezed(np.shape(result.data)) != _squeezed(np.shape(recorded)):
        return None
    return float(result.data) if np.ndim(recorded) == 0 else np.reshape(
        np.asarray(result.data, dtype=np.float64), np.shape(recorded))


def _squeezed(shape: tuple[int, ...]) -> list[int]:
    return [n for n in shape if n != 1]


def exactly(a: Any, b: Any) -> bool:
    """Whether two numbers (or arrays) are equal to a part in 10¹², as arithmetic on
    decimals is when float64 does it."""
    if a is None or b is None:
        return False
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.allclose(x, y, rtol=1e-12, atol=1e-300, equal_nan=True))


def same(a: Any, b: Any) -> bool:
    """Whether two recorded numbers (or arrays) agree, as float32 and float64 do."""
    if a is None or b is None:
        return False
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape and x.size != 1 and y.size != 1:
        return False
    with np.errstate(invalid="ignore"):
        # (fmax passes a nan by, as nanmax does, without nanmax's warning when all are nan)
        scale = max(float(np.fmax.reduce(np.abs(x), axis=None, initial=0.0)),
                    float(np.fmax.reduce(np.abs(y), axis=None, initial=0.0)))
        return bool(np.allclose(x, y, rtol=1e-5, atol=1e-9 + 1e-6 * scale, equal_nan=True))


def plus(a: Any, b: Any) -> Any:
    return np.asarray(a, dtype=np.float64) + np.asarray(b, dtype=np.float64)


def zero(x: Any) -> bool:
    return x is None or not np.any(np.asarray(x, dtype=np.float64))


def off_the_rule(G: nx.MultiDiGraph) -> tuple[list[Any], list[Any]]:
    """Where the recorded backward pass is not the chain rule: the ops whose shares
    are not what their rule sends for the gradient that reached them, and the values
    whose running sum is not what they held plus the share (an engine's ``=`` for
    ``+=``). Empty for a graph of over CHECKED_OPS ops, of several passes, or of arrays
    (a hand-written engine is scalar; autograd's float32 and reductions are its own)."""
    if not _checked(G):
        return [], []
    wrong_ops, wrong_sums = [], []
    # (a rolled loop's shared values: what the other repetitions had sent when the drawn
    # one's first share arrived, known then even where it arrived during the sweep)
    held: dict[Any, Any] = {**G.graph.get("seeds", {}), **G.graph.get("loop_before", {})}
    # (and what backward passes not drawn left in a value's .grad: the drawn shares add to it)
    held.update((v, before) for v, before in G.nodes(data="held_before") if before is not None)
    for step in backward_steps(G):
        if step.op is None:  # a rolled loop's closing step: no op, the engine's sums
            held.update(step.grads)
            continue
        shares = rule_shares(G, step, held.get(step.result))
        for position, edge in enumerate(step.edges):
            sent = G.edges[edge].get("grad")
            if shares is not None and sent is not None and not same(shares[position], sent):
                wrong_ops.append(step.op)
            running = G.edges[edge].get("running")
            if sent is not None and running is not None and not same(
                    running, plus(held.get(edge[0], 0.0), sent)):
                wrong_sums.append(edge[0])
            if running is not None:  # (a * a: its second share adds to its first)
                held[edge[0]] = running
        held.update(step.grads)
    return list(dict.fromkeys(wrong_ops)), list(dict.fromkeys(wrong_sums))


def _checked(G: nx.MultiDiGraph) -> bool:
    """Whether off_the_rule checks the graph's backward pass: one of a hand-written
    engine's size and kind (scalars, one seed)."""
    return len(G.graph.get("backward_order", ())) <= CHECKED_OPS \
        and len(G.graph.get("seeds", {})) <= 1 \
        and not any(shape for _, shape in G.nodes(data="shape") if shape is not None)


def out_of_order(G: nx.MultiDiGraph) -> dict[Any, Any]:
    """Each op a checked backward pass (off_the_rule's) ran before an op that uses its
    result, with the first such op: it sent on a gradient that had not all arrived (an
    engine that skips the reverse of its topological sort). Empty for a rolled loop,
    whose drawn repetition is swept among the others."""
    if not _checked(G) or G.graph.get("loop_count"):
        return {}
    when = {op: i for i, op in enumerate(G.graph.get("backward_order", ()))}
    early = {}
    for op, i in when.items():
        for result in G.successors(op):
            later = [user for user in G.successors(result) if when.get(user, -1) > i]
            if later:
                early[op] = min(later, key=when.__getitem__)
    return early


def wrong_seed(G: nx.MultiDiGraph) -> float | None:
    """The gradient a checked backward pass (off_the_rule's) started from at its root,
    where it is not 1 (∂L/∂L): a student's engine that never set it (0), or a seed given
    to backward(); None where it started from 1 or is not checked."""
    seeds = G.graph.get("seeds", {})
    if len(seeds) != 1 or not _checked(G):
        return None
    (seed,) = seeds.values()
    return None if seed is None or float(seed) == 1.0 else float(seed)


def not_the_chain_rules(G: nx.MultiDiGraph) -> list[Any]:
    """The values whose recorded gradient is not the chain rule's, in the graph's order:
    the reference engine's rules run backward over the recorded forward numbers, from
    the seed (from 1 where a checked pass started from another: wrong_seed), each op
    once its result's gradient is whole. Empty where off_the_rule finds the engine
    following the rule (or does not check the graph) from a seed of 1, and where the
    reference lacks a rule on the way; but from a wrong seed, every value with a
    gradient (the chain rule multiplies each by the seed)."""
    wrong_ops, wrong_sums = off_the_rule(G)
    seeded_wrong = wrong_seed(G) is not None
    if not wrong_ops and not wrong_sums and not seeded_wrong and not out_of_order(G):
        return []
    steps = {step.op: step for step in backward_steps(G) if step.op is not None}
    order = list(nx.topological_sort(G))
    # (from ∂L/∂L = 1, whatever the engine started from)
    grads: dict[Any, Any] = {root: 1.0 if seeded_wrong else seed
                             for root, seed in G.graph.get("seeds", {}).items()}
    for op in reversed(order):
        if op not in steps:
            continue
        step = steps[op]
        shares = rule_shares(G, step, grads.get(step.result))
        if shares is None:  # (a rule the reference lacks, as a folded chain's +: the
            # engine's own local derivatives, what it sent over what reached the op)
            shares = _scaled_shares(G, step, grads.get(step.result))
        if shares is None:
            return [node for node in order if seeded_wrong and G.nodes[node].get("kind")
                    == "value" and G.nodes[node].get("grad") is not None]
        for (u, _, _), share in zip(step.edges, shares, strict=True):
            grads[u] = share if u not in grads else plus(grads[u], share)
    return [node for node in order if node in grads and G.nodes[node].get("grad") is not None
            and not same(G.nodes[node]["grad"], grads[node])]


def _scaled_shares(G: nx.MultiDiGraph, step: Any, upstream: Any) -> list | None:
    """What an op the reference has no rule for sends for ``upstream``, as the engine's
    own shares scaled from the gradient that reached it to ``upstream`` (scalars only;
    None where nothing reached it)."""
    reached = step.grads.get(step.result)
    sent = [G.edges[edge].get("grad") for edge in step.edges]
    if upstream is None or reached is None or any(x is None for x in sent) or any(
            np.ndim(x) for x in (upstream, reached, *sent)) or float(reached) == 0.0:
        return None
    return [float(x) * float(upstream) / float(reached) for x in sent]


# A worked caption writes out results of at most this many entries; larger ones are read
# on the picture's boxes and edges.
RESULT_ENTRIES = 12
# The most digits a worked product writes its numbers with, past the caption's precision,
# so that they give its result as written: 1 − t² cancels where t is near 1, and
# (1 − 0.9901²) · 4.307 is 0.08486, not the 0.08514 the engine's own t gives.
EXTRA_DIGITS = 3


def digits_for(G: nx.MultiDiGraph, step: Any, upstream: Any, position: int, contribution: Any,
               precision: int, written: list | None) -> int:
    """The fewest digits, ``precision`` or up to EXTRA_DIGITS more, with which the numbers
    of a worked product, as written, give the edge's share as the caption writes it (a
    share of more than RESULT_ENTRIES is not written: ``precision``)."""
    if np.size(contribution) > RESULT_ENTRIES:
        return precision
    want = number_text(contribution, precision)
    for digits in range(precision, precision + EXTRA_DIGITS + 1):
        shares = written if digits == precision else rule_shares(G, step, upstream, digits)
        if shares is None or number_text(shares[position], precision) == want:
            return digits
    return precision


def sum_line(left: str, before: Any, share: Any, after: Any, precision: int) -> str:
    """A fork's sum line, ``∂L/∂x = −0.2661 + 0.04436 ≈ −0.2218``: its two terms with the
    fewest digits, ``precision`` or up to EXTRA_DIGITS more, that add up to its sum as
    written (−0.2661 + 0.04436 is −0.22174: ``−0.26610 + 0.044357 ≈ −0.2218``); "=" where
    they do exactly."""
    want = number_text(after, precision)
    digits = next((d for d in range(precision, precision + EXTRA_DIGITS + 1)
                   if number_text(plus(as_written(before, d), as_written(share, d)),
                                  precision) == want), precision)
    exact = exactly(plus(as_written(before, digits), as_written(share, digits)),
                    as_written(after, precision))
    term = number_text(share, digits)
    return (f"{left} = {number_text(before, digits)} + "
            f"{f'({term})' if term.startswith('−') else term}{' = ' if exact else ' ≈ '}{want}")
