"""PyTorch's backward passes in a drawing: which are drawn, their seeds, what .grad holds."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .formatting import display_number
from .torch_record import CREATE_GRAPH, Recording, TorchImportError, _Arrival, _Call

__all__ = ["Leaves", "drawn_from", "pass_tops", "passes_and_leaves", "passes_through",
           "refuse_create_graph", "seeds_of_passes"]

def passes_through(recording: Recording, calls: Iterable[_Call]) -> list[int]:
    """The backward passes that went through any of ``calls``, in the order they ran."""
    gradients = recording._gradients
    return sorted({number for call in calls for node in call.nodes if node in gradients
                   for number in gradients[node].passes})


def _calls_of_pass(recording: Recording, number: int) -> list[_Call]:
    """The calls backward pass ``number`` went through, in the order they ran: each result
    of a node with several (chunk's three, which share one call index and node) too."""
    gradients = recording._gradients
    return [call for call in recording.calls
            if any(node in gradients and number in gradients[node].passes
                   for node in call.nodes) and _reached(recording, call)]


def _reached(recording: Recording, call: _Call) -> bool:
    """Whether backward reached the call's own result (chunk's k, unused, is not)."""
    shares = recording._shares.get(call.output) if call.results > 1 else None
    return shares is None or shares.outputs[call.result] is not None


def _tops(calls: list[_Call]) -> list[_Call]:
    """The calls whose result none of ``calls`` used: where a pass through them entered."""
    used = {operand.key for call in calls for operand in call.operands}
    return [call for call in calls if call.key not in used]


def pass_tops(recording: Recording, number: int) -> list[_Call]:
    """Where backward pass ``number`` started among the recorded calls: its roots."""
    return _tops(_calls_of_pass(recording, number))


def drawn_from(calls: list[_Call], nodes: list) -> bool:
    """Whether ``calls`` (a root's graph) use any of the values ``nodes`` (roots' keys)."""
    roots = set(nodes)
    return any(operand.key[0] == "node" and operand.key in roots
               for call in calls for operand in call.operands)


def refuse_create_graph(recording: Recording, calls: list[_Call], passes: list[int]) -> None:
    """Refuse a drawing that a pass with create_graph=True went through, when the script
    then differentiated the gradient it built: that graph is not recorded, and the second
    backward pass along it adds to .grad. (A gradient made with create_graph=True and
    never differentiated leaves the first pass's numbers as they are: drawn.)"""
    if not recording.differentiates_gradient:
        return
    leaves = {operand.key[1] for call in calls for operand in call.operands
              if operand.key[0] == "leaf"}
    reached = set(passes) | {arrival.pass_number for leaf in leaves
                             for arrival in recording.arrivals.get(leaf, ())}
    if reached & recording.create_graph_passes:
        raise TorchImportError(CREATE_GRAPH)


def seeds_of_passes(recording: Recording, calls: list[_Call], passes: list[int],
                    sent: Callable[[_Call, int], list]) -> tuple[dict[Any, Any], bool]:
    """Each drawn value where a backward pass entered the drawing, with the gradient it
    started with there (summed over passes): what the pass brought to the value beyond
    what drawn ops sent it (``sent(call, pass)``: a call's gradients in that pass); and
    whether a pass entered from a value beyond the drawing (an op not drawn sent it).

    A root seeded by ``backward()`` is one; so is a root another drawn root was computed
    from, seeded in the same pass (``torch.autograd.backward([L1, L2])``).
    """
    drawn = set(calls)
    seeds: dict[Any, Any] = {}
    entered = False
    gradients = recording._gradients
    for number in passes:
        in_pass = _calls_of_pass(recording, number)
        arriving: dict[Any, Any] = {}
        for call in in_pass:
            if call not in drawn:
                entered = entered or any(
                    operand.key[0] == "node" and recording._call_of.get(operand.key) in drawn
                    for operand in call.operands)
                continue
            for operand, grad in zip(call.operands, sent(call, number), strict=True):
                if operand.key[0] == "node" and grad is not None:
                    previous = arriving.get(operand.key)
                    arriving[operand.key] = grad if previous is None else previous + grad
        for call in in_pass:
            key = call.key
            shares = recording._shares.get(call.output) if call.results > 1 else None
            # (a node's hook sees its first result's gradient; chunk[1]'s is in its shares)
            brought = gradients[call.output].passes.get(number) if shares is None \
                else shares.outputs[call.result] if len(passes) == 1 else None
            if call not in drawn or brought is None:
                continue
            # (float rounding, as _negligible has it, in one pass over the numbers; most
            # often none: one op sent all it brought, and equal is the cheaper test)
            if key in arriving and (arriving[key].equal(brought) or arriving[key].allclose(
                    brought, rtol=1e-5, atol=1e-5)):
                continue
            seed = brought if key not in arriving else brought - arriving[key]
            seeds[key] = seed if key not in seeds else seeds[key] + seed
    return seeds, entered


@dataclass
class Leaves:
    """What the drawn leaves' gradients are: ``grads`` (key -> its ``.grad``, as
    ``passes_and_leaves`` reads it), ``earlier`` (key -> its share not drawn), ``passes``
    (key -> how many passes that ``.grad`` sums, where some are not drawn), and the notes."""

    grads: dict[Any, Any] = field(default_factory=dict)
    earlier: dict[Any, Any] = field(default_factory=dict)
    passes: dict[Any, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def passes_and_leaves(recording: Recording, calls: list[_Call], passes: list[int],
                      sent_by: dict, labels: dict) -> Leaves:
    """Each drawn leaf's gradient as ``.grad`` held it once the passes that added to it
    along with the last drawn one had run (up to the next reset: what an optimizer step
    then reads), with a note where that holds shares not drawn (earlier micro-batches);
    ``labels`` maps value keys to their drawn names.

    Notes, too, that several passes are drawn, and gradients ``torch.autograd.grad``
    returned, which it does not add to ``.grad``.
    """
    leaves = Leaves()
    notes = leaves.notes
    drawn_passes = set(passes)
    if len(passes) > 1:
        notes.append(f"the gradients drawn add up {len(passes)} backward passes, in the order "
                     "they ran, as autograd adds them; an edge several passes went along "
                     "carries the sum of their shares")
    drawn_sum: dict[Any, Any] = {}
    for call in calls:
        for operand, grad in zip(call.operands, sent_by[call], strict=True):
            if operand.key[0] == "leaf" and grad is not None:
                previous = drawn_sum.get(operand.key)
                drawn_sum[operand.key] = grad if previous is None else previous + grad
    for key, drawn in drawn_sum.items():
        name = labels[key] or "a parameter"
        arrivals = recording.arrivals.get(key[1], [])
        added = [i for i, arrival in enumerate(arrivals)
                 if arrival.pass_number in drawn_passes and arrival.added]
        if not added:
            if any(arrival.pass_number in drawn_passes for arrival in arrivals):
                notes.append(f"{name}: its gradient drawn is what torch.autograd.grad "
                             f"returned, which it does not add to {name}.grad")
            continue
        chain = _since_reset(arrivals, added[-1])
        grad = chain[-1].after
        leaves.grads[key] = grad
        if grad.equal(drawn):  # (the common case, tested in one pass: nothing else added)
            continue
        rest = grad - drawn
        if _negligible(rest, grad):
            continue
        undrawn = [arrival for arrival in chain if arrival.pass_number not in drawn_passes]
        leaves.earlier[key] = rest
        if len(chain) > 1:
            leaves.passes[key] = len(chain)
        share = _number_text(rest)
        told = (f"{name}.grad is drawn as it was once the backward passes adding to it had "
                "run (what an optimizer step then reads)")
        if undrawn and _explains(rest, chain, undrawn):
            count = len(undrawn)
            when = "earlier " if chain.index(undrawn[-1]) < chain.index(arrivals[added[-1]]) \
                else ""
            notes.append(f"{told}: it includes {count} {when}backward "
                         f"pass{'es' if count > 1 else ''} not drawn; "
                         f"{'their' if count > 1 else 'its'} share is {share}")
        else:
            notes.append(f"{told}: it holds {share} more than the gradients drawn into it "
                         "(from backward passes or ops not drawn, or a change to .grad)")
    return leaves


def _since_reset(arrivals: list[_Arrival], last: int) -> list[_Arrival]:
    """The passes whose gradients ``.grad`` summed along with ``arrivals[last]``'s: back to
    where .grad was last set otherwise (None, zero_grad(), an assignment), and on to where
    it is next; each pass found .grad as the one before left it."""
    added = [arrival for arrival in arrivals if arrival.added]
    at = added.index(arrivals[last])
    start = at
    while start > 0 and added[start].continues:
        start -= 1
    end = at + 1
    while end < len(added) and added[end].continues:
        end += 1
    return added[start:end]


def _explains(rest: Any, chain: list[_Arrival], undrawn: list[_Arrival]) -> bool:
    """Whether the passes not drawn (and what .grad held before them) make up ``rest``."""
    share = sum((arrival.arrived for arrival in undrawn), chain[0].before
                if chain[0].before is not None else 0 * rest)
    return _negligible(rest - share, rest)


def _negligible(difference: Any, scale: Any) -> bool:
    """Whether ``difference`` is float rounding next to ``scale`` (float32 sums in any order)."""
    bound = scale.abs().add_(1).mul_(1e-5)
    return bool(difference.abs().le_(bound).all())


def _number_text(tensor: Any) -> str:
    """A tensor's numbers as a note writes them: ``−4``, ``[1, −2]``."""
    if tensor.dim() == 0:
        return display_number(tensor.item())
    flat = tensor.detach().double().flatten().tolist()
    if len(flat) > 6:
        return "a tensor (see the gradients drawn)"
    return "[" + ", ".join(display_number(v) for v in flat) + "]"
