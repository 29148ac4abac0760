"""Rolled loops: a block the IR repeats (an unrolled RNN) found by structure, and drawn once.

``find_loop`` reads the IR's structure alone, never its names: a loop is a
block of ops repeated N ≥ 2 times with the same ops in the same places, the
same shared values (a weight used by every repetition at the same operand),
and each repetition's result feeding the next (the carried value, ``h``).
It grows the repetitions side by side from the users of one shared leaf,
taking a neighbour only when every repetition has one of the same kind, then
checks that every operand of every repetition is its own, shared, or carried
from the repetition before.

``rolled`` is the view that draws the block once: the numbers of one
repetition (the last, unless asked), each carried value entering as a box
that the block's output loops back to (``loop_back``, drawn ×N), and each
shared value with the gradient the engine holds for it, the sum over every
repetition (its edges show the drawn repetition's share). Each block value
also keeps its data and gradient at every repetition (``loop_data``,
``loop_grad``) for the page to show any one of them. The steps sweep the drawn
repetition, each shared value's gradient the engine's sum so far (the later
repetitions' shares, then the drawn one's); a closing step then adds the shares
of the repetitions backward reached after it (``loop_rest``, ``loop_shares``),
so the last step shows the gradient .grad holds, as the figure does.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import networkx as nx

from .ir import operand_edges, result_of
from .names import value_names

__all__ = ["Loop", "find_loop", "loop_note", "rolled"]


@dataclass(frozen=True)
class Loop:
    """A block repeated ``count`` times: ``slots`` are its nodes, each a tuple of the
    node that plays that part in each repetition (first to last); ``carried`` the
    operands fed by the repetition before, as (value slot, op slot, arg, the value
    the first repetition takes there); ``shared`` the values every repetition uses."""

    slots: tuple[tuple[Hashable, ...], ...]
    carried: tuple[tuple[int, int, int, Hashable], ...]
    shared: tuple[Hashable, ...]

    @property
    def count(self) -> int:
        return len(self.slots[0])

    def repetition(self, k: int) -> list[Hashable]:
        """The nodes of repetition ``k`` (0 is the first), slot by slot."""
        return [slot[k] for slot in self.slots]


# The fewest repetitions drawn as a loop.
FEWEST = 2


def _op_kind(attrs: dict) -> tuple:
    """What makes two ops the same op of a block (never their names or numbers)."""
    return (attrs["op"], attrs.get("symbol"), attrs.get("exponent"), attrs.get("axis"),
            tuple(attrs.get("group") or ()))


def _kind(G: nx.MultiDiGraph, node: Hashable) -> tuple:
    attrs = G._node[node]
    if attrs["kind"] == "op":
        return ("op", *_op_kind(attrs), G.in_degree(node))
    made = bool(G._pred[node])
    return ("value", made, attrs.get("shape"), None if made else attrs.get("role"))


def find_loop(G: nx.MultiDiGraph) -> Loop | None:
    """The repeated block of ``G`` covering the most nodes, or None if it has none."""
    position = {node: k for k, node in enumerate(G)}
    tried: set = set()
    best: Loop | None = None
    for anchors in _anchor_groups(G, position):
        if anchors[0] in tried:
            continue  # grown from another shared value's users already
        loop, covered = _grown(G, anchors)
        tried.update(covered)
        if loop is not None and (best is None or _size(loop) > _size(best)):
            best = loop
    return best


def _size(loop: Loop) -> int:
    return len(loop.slots) * loop.count


def _anchor_groups(G: nx.MultiDiGraph, position: dict) -> list[list]:
    """For each leaf, its users grouped by (kind of op, operand place): the groups of
    two or more, largest first, each in graph order."""
    groups = []
    for leaf in G:
        if G._pred[leaf] or G._node[leaf]["kind"] != "value":
            continue
        by_place: dict[tuple, list] = {}
        for op, keyed in G._succ[leaf].items():
            for data in keyed.values():
                by_place.setdefault((_kind(G, op), data["arg"]), []).append(op)
        groups.extend(sorted(set(users), key=position.get) for users in by_place.values()
                      if len(set(users)) >= FEWEST)
    return sorted(groups, key=lambda users: (-len(users), position[users[0]]))


def _grown(G: nx.MultiDiGraph, anchors: list) -> tuple[Loop | None, set]:
    """The repetitions grown side by side from one op each (``anchors``), checked; and
    every node grown (to try no anchor inside them again)."""
    count = len(anchors)
    owner: dict[Hashable, int] = {}
    slots: list[tuple] = []

    def claim(nodes: tuple) -> None:
        for node in nodes:
            owner[node] = len(slots)
        slots.append(nodes)

    def takes(nodes: tuple) -> bool:
        return (None not in nodes and len(set(nodes)) == count
                and not any(node in owner for node in nodes)
                and len({_kind(G, node) for node in nodes}) == 1)

    claim(tuple(anchors))
    at = 0
    while at < len(slots):
        nodes = slots[at]
        at += 1
        if G._node[nodes[0]]["kind"] == "op":
            arity = len(operand_edges(G, nodes[0]))
            neighbours = [tuple(operand_edges(G, op)[arg][0] for op in nodes)
                          for arg in range(arity)]
            neighbours.append(tuple(result_of(G, op) for op in nodes))
        else:
            neighbours = [tuple(next(iter(G._pred[value]), None) for value in nodes)]
            neighbours.extend(_users_alike(G, nodes, owner))
        for candidate in neighbours:
            if takes(candidate):
                claim(candidate)
    return _checked(G, slots, owner), set(owner)


def _users_alike(G: nx.MultiDiGraph, values: tuple, owner: dict) -> list[tuple]:
    """The users of ``values`` (one per repetition) not grown yet, that every repetition
    has once at the same place: one tuple of them per place."""
    places: list[dict[tuple, list]] = []
    for value in values:
        found: dict[tuple, list] = {}
        for op, keyed in G._succ[value].items():
            if op in owner:
                continue
            for data in keyed.values():
                found.setdefault((_kind(G, op), data["arg"]), []).append(op)
        places.append(found)
    alike = [place for place, users in places[0].items()
             if all(len(found.get(place, ())) == 1 for found in places) and len(users) == 1]
    return [tuple(found[place][0] for found in places) for place in alike]


def _checked(G: nx.MultiDiGraph, slots: list[tuple], owner: dict) -> Loop | None:
    """The Loop the grown ``slots`` make, or None unless every operand of every
    repetition is its own, shared by all, or carried from the one before, at least one
    is carried and one shared, and no value of a repetition but the last is used
    outside the block."""
    count = len(slots[0])
    if count < FEWEST:
        return None
    carried: dict[tuple[int, int], tuple] = {}
    shared: dict[Hashable, None] = {}
    for index, ops in enumerate(slots):
        if G._node[ops[0]]["kind"] != "op":
            continue
        for arg in range(len(operand_edges(G, ops[0]))):
            operands = [operand_edges(G, op)[arg][0] for op in ops]
            own = owner.get(operands[0])
            if own is not None and all(u == slots[own][k] for k, u in enumerate(operands)):
                continue  # made inside the same repetition
            if len(set(operands)) == 1 and operands[0] not in owner:
                shared[operands[0]] = None
                continue
            source = owner.get(operands[1])
            if (operands[0] in owner or source is None
                    or not all(u == slots[source][k - 1] for k, u in enumerate(operands)
                               if k)):
                return None
            carried[index, arg] = (source, operands[0])
    if not carried or not shared:
        return None
    # Each repetition's values are used by itself and the next only (the last's by
    # what follows the loop too): a sum over every step's output is not rolled.
    for values in slots:
        for k, value in enumerate(values[:-1]):
            for user in G._succ[value]:
                own = owner.get(user)
                if own is None or user not in (slots[own][k], slots[own][k + 1]):
                    return None
    return Loop(tuple(slots), tuple((source, index, arg, first) for (index, arg), (source, first)
                                    in sorted(carried.items())), tuple(shared))


# ---------------------------------------------------------------- the rolled view


def rolled(G: nx.MultiDiGraph, loop: Loop, repetition: int | None = None) -> nx.MultiDiGraph:
    """``G`` with its loop drawn once, with the numbers of ``repetition`` (0 the first;
    default the last). Node ids are the last repetition's whichever is drawn, so every
    repetition's picture is the same drawing. Drawn before the loop's last repetition,
    the block is followed by nothing: backward enters it from beyond (its output's
    gradient, the engine's)."""
    count = loop.count
    k = count - 1 if repetition is None else repetition
    if not 0 <= k < count:
        raise IndexError(f"repetition {repetition} of a loop of {count}")
    last = count - 1
    drawn = {slot[k]: slot[last] for slot in loop.slots}  # repetition k's node -> its id
    entering: dict[int, Hashable] = {}  # a carried value slot -> its box's id
    for source, _, _, first in loop.carried:
        box = loop.slots[source][last - 1]
        entering[source] = box
        drawn[first if k == 0 else loop.slots[source][k - 1]] = box
    block = {node for slot in loop.slots for node in slot}
    ends = [loop.slots[source][k] for source in entering]
    kept = set(loop.shared)
    if k == last:  # what follows the loop, and what it reads
        kept |= _reached(G, [v for node in loop.repetition(last) for v in G._succ[node]],
                         G._succ, block) | (set(G.graph["roots"]) - block)
    kept |= _reached(G, list(kept), G._pred, block)
    kept -= set(drawn)
    H = nx.MultiDiGraph()
    H.graph.update(G.graph)
    for node in G:  # (in G's order: the drawing's order does not depend on k)
        if node in kept:
            H.add_node(node, **G._node[node])
    for node, attrs in _block_nodes(G, loop, k, drawn, entering):
        H.add_node(node, **attrs)
    source_of = {v: u for u, v in drawn.items()}
    for node in list(H):
        source = source_of.get(node, node)
        if H._node[node]["kind"] != "op":
            continue
        for u, _, key in operand_edges(G, source):
            H.add_edge(drawn.get(u, u), node, key=key, **G.edges[u, source, key])
        H.add_edge(node, drawn.get(result_of(G, source), result_of(G, source)), key=0,
                   **G.edges[source, result_of(G, source), 0])
    H.graph["backward_order"] = list(dict.fromkeys(
        drawn.get(op, op) for op in G.graph.get("backward_order", ())
        if drawn.get(op, op) in H and (op in drawn or op not in block)))
    if k != last:  # (seeded with what entered from beyond: what the later repetitions sent)
        roots = [drawn[end] for end in ends]
        own = set(loop.repetition(k))
        seeds = {root: _held_after(G, end, set(G._succ[end]) - own, _steps_of(G))
                 for root, end in zip(roots, ends, strict=True)}
        H.graph.update(roots=roots, entered=True,
                       seeds={root: seed for root, seed in seeds.items() if seed is not None})
    roots = set(H.graph["roots"])
    for node, attrs in H.nodes(data=True):
        if attrs["kind"] == "value" and (node in roots or attrs["role"] == "output"):
            attrs["role"] = "output" if node in roots else "intermediate"
    before, arrived, came = _sums_before(G, H, loop, k, source_of)
    if before:
        H.graph["loop_before"] = before
        H.graph["loop_came_before"] = came
    if arrived:
        H.graph["loop_arrived"] = arrived
    closing = _closing(G, H, loop, k, source_of)
    if closing is not None:
        *closing_step, mixed = closing
        H.graph.update(zip(("loop_rest_after", "loop_rest", "loop_shares"), closing_step,
                           strict=True))
        if mixed:
            H.graph["loop_mixed"] = True
    # A shared value an op made before the loop: that op's step reads it with every
    # repetition's share in, its gradient as the engine ended with it.
    after = {value: G._node[value]["grad"] for value in loop.shared
             if value in H and H._pred[value] and G._node[value].get("grad") is not None}
    if after:
        H.graph["loop_after"] = after
    H.graph.update(loop_count=count, loop_step=k,
                   loop_back=[node for source, box in entering.items()
                              for node in (loop.slots[source][last], box)],
                   notes=[*G.graph.get("notes", ()),
                          loop_note(G, loop, k, closing=closing is not None)])
    return H


def _closing(G: nx.MultiDiGraph, H: nx.MultiDiGraph, loop: Loop, k: int,
             source_of: dict) -> tuple[Hashable, dict, dict, bool] | None:
    """The closing step of the drawn repetition ``k``'s sweep: the op it follows (the
    repetition's last, as drawn), and for each shared value that backward reached
    again after its drawn share (the earlier repetitions, and a use outside the loop
    not drawn, until a drawn one), its gradient then as the engine held it (.grad, if
    no share came later) and those shares, each with its repetition (1 the first, 0
    none); and whether some came before the repetition's last op (an order that mixes
    repetitions). None if no shared value has a share to come."""
    step_of = {op: step for step, op in enumerate(G.graph.get("backward_order", ()))}
    swept = [op for op in loop.repetition(k) if op in step_of]
    if not swept:
        return None
    last = max(swept, key=step_of.__getitem__)
    end = step_of[last]
    repetition_of = {node: t + 1 for t in range(loop.count) for node in loop.repetition(t)}
    drawn_ops = {source_of.get(op, op) for op, kind in H.nodes(data="kind") if kind == "op"}
    rest, shares, mixed = {}, {}, False
    for value in loop.shared:
        if G._node[value].get("grad") is None:
            continue
        edges = sorted((step_of[op], op, key) for op, keyed in G._succ[value].items()
                       for key, data in keyed.items()
                       if op in step_of and data["grad"] is not None)
        # After its last share the drawn sweep shows: an engine whose order mixes the
        # repetitions (a children set's) may send the others' shares while it sweeps
        # the drawn one, after that share, not only once the drawn one is done.
        own = max((at for at, op, _ in edges if op in drawn_ops and at <= end), default=end)
        later = []
        for at, op, key in edges:
            if at <= own:
                continue
            if op in drawn_ops:  # (its own step adds it)
                break
            later.append((op, key))
            mixed = mixed or at < end
        if not later:
            continue
        op, key = later[-1]
        grad = (G._node[value]["grad"] if (op, key) == edges[-1][1:]
                else G.edges[value, op, key].get("running"))
        if grad is None:
            continue
        rest[value] = grad
        shares[value] = [[repetition_of.get(op, 0), G.edges[value, op, key]["grad"]]
                         for op, key in later]
    if not rest:
        return None
    return loop.slots[loop.repetition(k).index(last)][-1], rest, shares, mixed


def _sums_before(G: nx.MultiDiGraph, H: nx.MultiDiGraph, loop: Loop, k: int, source_of: dict
                 ) -> tuple[dict[Hashable, object], list[Hashable], dict[Hashable, list[int]]]:
    """Each shared value's gradient as the engine held it when the first of its drawn
    edges sent its share: the running sum its edge processed just before had left
    (a later repetition's), if that edge is not drawn; those of them that reached
    it while backward swept repetition ``k`` (an order that mixes repetitions), not
    before: known at that share's step, not at the sweep's start; and for each, the
    repetitions whose shares that sum holds, as backward sent them (1 the first, 0 a
    use outside the loop): 40 to 2, or, in an order that mixes them, some of them."""
    step_of = {op: step for step, op in enumerate(G.graph.get("backward_order", ()))}
    drawn_ops = {source_of.get(op, op) for op, kind in H.nodes(data="kind") if kind == "op"}
    begun = min((step_of[op] for op in loop.repetition(k) if op in step_of), default=-1)
    repetition_of = {node: t + 1 for t in range(loop.count) for node in loop.repetition(t)}
    before, arrived, came = {}, [], {}
    for value in loop.shared:
        edges = sorted(((step_of[v], v, key) for v, keyed in G._succ[value].items()
                        for key in keyed if v in step_of and G.edges[value, v, key]["grad"]
                        is not None), key=lambda edge: edge[0])
        first = next((at for at, (_, op, _) in enumerate(edges) if op in drawn_ops), None)
        if first:
            _, op, key = edges[first - 1]
            if op not in drawn_ops and G.edges[value, op, key].get("running") is not None:
                before[value] = G.edges[value, op, key]["running"]
                came[value] = list(dict.fromkeys(repetition_of.get(user, 0)
                                                 for _, user, _ in edges[:first]))
                if step_of[op] > begun:
                    arrived.append(value)
    return before, arrived, came


def _reached(G: nx.MultiDiGraph, start: list, step: dict, block: set) -> set:
    """The nodes outside ``block`` reached from ``start`` along ``step`` (G's
    successors or predecessors) without entering the block."""
    found: set = set()
    while start:
        node = start.pop()
        if node in found or node in block:
            continue
        found.add(node)
        start.extend(step[node])
    return found


def _block_nodes(G: nx.MultiDiGraph, loop: Loop, k: int, drawn: dict,
                 entering: dict) -> list[tuple[Hashable, dict]]:
    """The block's nodes as drawn at repetition ``k``: each with its own numbers, its
    ``saves`` named as drawn, every repetition's numbers kept on its values; each
    carried value a box (a leaf here) with the numbers of what entered repetition k."""
    last = loop.count - 1
    nodes = []
    for slot in loop.slots:
        attrs = dict(G._node[slot[k]])
        if attrs["kind"] == "op":
            attrs["saves"] = [drawn.get(value, value) for value in attrs.get("saves", ())]
        else:  # (named as its own, x[4], else as the last repetition's: the script
            # names what the loop left, h; a name each repetition has with its own
            # number, r1, r2, ..., as what every repetition has, r_t)
            attrs.update(label=_stepped(G, slot) or attrs.get("label")
                         or G._node[slot[last]]["label"], **_each(G, slot))
            own = [G._node[value].get("label") for value in slot]
            if all(own) and len(set(own)) == len(own) and not _stepped(G, slot):
                attrs["loop_names"] = own  # (each repetition's input its own: x[t])
            elif not any(own) and not G._pred[slot[k]] and len(
                    {G._node[value]["data"] for value in slot
                     if isinstance(G._node[value]["data"], (int, float))}) > 1:
                # (an unnamed number each repetition has its own of, named by it as the
                # drawing names the drawn one's: 1, −0.5, …, not the drawn −1.2 at each)
                names = value_names(G.subgraph(slot))
                attrs["loop_names"] = [names[value].text for value in slot]
        nodes.append((slot[last], attrs))
    for source, box in entering.items():
        first = next(first for slot, _, _, first in loop.carried if slot == source)
        entered = (first, *loop.slots[source][:-1])  # what entered each repetition
        attrs = dict(G._node[entered[k]])
        stepped = _stepped(G, loop.slots[source])
        name = stepped.removesuffix("_t") if stepped \
            else G._node[loop.slots[source][last]]["label"]
        # Its gradient as the repetition it entered left it: an LSTM's c also goes on
        # in its own repetition (to h), whose share the drawn block does not send.
        step_of = _steps_of(G)
        sent = [_held_after(G, value, set(loop.repetition(t)), step_of)
                for t, value in enumerate(entered)]
        attrs.update(role="input", label=name and f"{name}_prev", loop_data=[
            G._node[value]["data"] for value in entered], loop_grad=sent, grad=sent[k])
        attrs.pop("passes", None)
        nodes.append((box, attrs))
    return nodes


def _stepped(G: nx.MultiDiGraph, values: tuple) -> str | None:
    """``r_t`` for values named r1, r2, ... one a repetition (an RNN's gates and
    states, named by step); the last one's name if only it breaks the run (the script
    names what the loop left, h); else None."""
    labels = [G._node[value].get("label") or "" for value in values]
    found = [_STEPPED.fullmatch(label) for label in labels]
    for run, last in ((found, None), (found[:-1], labels[-1])):
        if all(run) and len({match.group(1) for match in run}) == 1 \
                and [int(match.group(2)) for match in run] == list(range(1, len(run) + 1)):
            return last or f"{run[0].group(1)}_t"
    return None


_STEPPED = re.compile(r"([A-Za-z]+)([0-9]+)")


def _steps_of(G: nx.MultiDiGraph) -> dict:
    """Each op's place in the backward order."""
    return {op: step for step, op in enumerate(G.graph.get("backward_order", ()))}


def _held_after(G: nx.MultiDiGraph, value: Hashable, ops: set, step_of: dict) -> Any:
    """The gradient ``value`` held once the ops ``ops`` had sent it their shares: the
    running sum at the last of their edges (the engine's own, in its order: ``step_of``,
    each op's place in the backward order), when every other op's share came after
    theirs; its whole gradient when no other op sent one."""
    grad = G._node[value]["grad"]
    theirs, others = [], []
    for op, keyed in G._succ[value].items():
        for data in keyed.values():
            if data.get("grad") is not None:
                (theirs if op in ops else others).append((step_of.get(op), data))
    if not theirs or not others:
        return grad
    if any(step is None for step, _ in theirs + others):
        return grad
    last, data = max(theirs, key=lambda edge: edge[0])
    if min(step for step, _ in others) < last or "running" not in data:
        return grad  # (a share came between theirs: no number held theirs alone)
    return data["running"]


def _each(G: nx.MultiDiGraph, values: tuple) -> dict[str, list]:
    """A block value's numbers at every repetition."""
    return {"loop_data": [G._node[value]["data"] for value in values],
            "loop_grad": [G._node[value]["grad"] for value in values]}


def loop_note(G: nx.MultiDiGraph, loop: Loop, k: int, closing: bool = False) -> str:
    """What the legend says of a rolled loop: whose numbers are drawn, and what the
    shared values' gradients are (``closing``: the steps end with the closing step)."""
    names = value_names(G)
    learned = [names[node].text for node in loop.shared if G._node[node].get("grad") is not None]
    so_far = ("a step shows the sum so far, the last step all of it" if closing
              else "a step shows the sum so far")
    shares = (f"; {' and '.join(learned)}, shared by all {loop.count}, add up every "
              f"repetition's share in their gradients, as .grad does ({so_far})"
              ) if learned else ""
    return (f"one block drawn for a loop repeated {loop.count} times (the dashed edge "
            f"×{loop.count}): its numbers are repetition {k + 1}'s (1 the first){shares}")
