"""Views of the IR for drawing: groups closed into one operator each, or a compact view.

The IR keeps every op the engine recorded, each with the groups it was made
in (its ``group`` attribute, outermost first). A view is a new IR graph in
which the ops of a closed group are one op (``ops.GROUP``) named after the
group, from the values that enter it to the value it makes. Its operand
edges carry what the ops inside sent back to each operand (their recorded
contributions, added) and the operand's running sum after the last of them
(the engine's number), so every picture of the view reads the same
gradients as the IR. The ops inside are listed in the group op's
``members``; with ``expand`` nothing is closed and the drawing boxes each
group instead.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .formatting import MAX_ITEMS
from .ir import operand_edges, plain_number, result_of
from .memory import saved_values, value_bytes
from .names import value_names

__all__ = ["closed_groups", "compact", "drawn_graph", "group_path"]

# How long the expression labelling a compact view's operator may get before
# its operands become "…".
_LONGEST = 26


def drawn_graph(G: nx.MultiDiGraph, *, expand: bool = False, modules: bool | int = False,
                compact_view: bool = False) -> nx.MultiDiGraph:
    """The graph a picture draws: ``G`` with its groups closed (unless ``expand``),
    PyTorch modules too with ``modules`` (True: the innermost; a depth N: the modules N
    levels below the model, or an innermost one above them), and chains of unnamed ops
    closed with ``compact_view``. ``G`` itself is left as it is; a view given is drawn
    as it is (its graph attribute ``view`` says so)."""
    if expand or G.graph.get("view"):
        return G  # (a view is drawn as it is)
    view = closed_groups(G, modules=modules)
    view = compact(view) if compact_view else view
    if view is G:
        return G
    view.graph["view"] = True
    return view


def group_path(attrs: dict) -> tuple[tuple[str, int], ...]:
    """A node's groups, outermost first, each as (name, which entry into it)."""
    names = attrs.get("group") or ()
    calls = attrs.get("group_calls") or [0] * len(names)
    return tuple(zip(names, calls, strict=True))


def _key(path: tuple, modules: set, close_modules: bool | int,
         parents: set = frozenset()) -> tuple | None:
    """The group an op is drawn in when closed: its outermost group of the
    script's, or (with ``close_modules``) its innermost torch module if no module ran
    inside that one; with a depth N, its module N levels below the model (the model is
    level 0), else that innermost one. ``parents`` are the modules some module ran in:
    an op of theirs between their modules (a residual addition, a functional ReLU) is
    drawn as itself, as the module is not drawn as one operator at that level."""
    level = -1
    for depth, (name, _) in enumerate(path):
        if name not in modules:
            return path[:depth + 1]
        level += 1
        leaf = name not in parents and not any(deeper in modules
                                               for deeper, _ in path[depth + 1:])
        if close_modules and (leaf or (close_modules is not True and level == close_modules)):
            return path[:depth + 1]
    return None


def closed_groups(G: nx.MultiDiGraph, *, modules: bool | int = False) -> nx.MultiDiGraph:
    """``G`` with the ops of each group (and, with ``modules``, of each innermost
    torch module, or each N levels down) drawn as one; a group that makes more than
    one value used outside it stays open."""
    module_names = set(G.graph.get("module_groups", ()))
    paths = {op: group_path(attrs) for op, attrs in G._node.items()  # (networkx's own dict)
             if attrs.get("group") and attrs.get("kind") == "op"
             and attrs["op"] != ops.GROUP.name}
    parents = {name for path in paths.values() for at, (name, _) in enumerate(path)
               if any(deeper in module_names for deeper, _ in path[at + 1:])}
    members: dict[tuple, list] = {}
    for op, path in paths.items():
        key = _key(path, module_names, modules, parents)
        if key is not None:
            members.setdefault(key, []).append(op)
    # A group that cannot be one operator (two results used outside) is drawn
    # open, and the groups inside it are tried in its place.
    roots = set(G.graph.get("roots", ()))
    settled: dict[tuple, list] = {}
    drawn_open = []
    while members:
        key, inner = members.popitem()
        if len(_outputs(G, set(inner), roots)) == 1:
            settled[key] = inner
            continue
        drawn_open.append(key[-1][0])
        for op in inner:  # its own ops are drawn one by one, its groups tried
            path = group_path(G.nodes[op])
            if len(path) > len(key):
                members.setdefault(path[:len(key) + 1], []).append(op)
    return _closed(G, {key: (key[-1][0], inner) for key, inner in settled.items()
                       if not _lone_op(G, key[-1][0], inner, module_names)}, drawn_open)


def _lone_op(G: nx.MultiDiGraph, name: str, inner: list, modules: set) -> bool:
    """Whether a torch module is one op of no parameters of its own (nn.ReLU, nn.Flatten),
    drawn as that op: its rule, and a dead ReLU's marks, are the op's, not a group's."""
    return name in modules and len(inner) == 1 and not any(
        (G.nodes[u].get("label") or "").startswith(name + ".")
        for u, _, _ in operand_edges(G, inner[0]))


def compact(G: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """``G`` with every run of ops whose results have no name closed into one
    operator, written as the expression it computes (``Σ(o − y)²``): only named
    values (and what nothing names but the graph's inputs) remain as boxes."""
    names = value_names(G, longest=_LONGEST)
    parent: dict[Any, Any] = {}

    def find(op: Any) -> Any:
        while parent[op] != op:
            parent[op] = parent[parent[op]]
            op = parent[op]
        return op

    runs = [op for op, kind in G.nodes(data="kind") if kind == "op"]
    for op in runs:
        parent[op] = op
    roots = set(G.graph.get("roots", ()))
    for op in runs:
        for u, _, _ in operand_edges(G, op):
            producers = list(G.predecessors(u))
            # An unnamed intermediate used only here joins its op's run to this one.
            if (producers and not G.nodes[u].get("label") and u not in roots
                    and G.out_degree(u) == 1):
                parent[find(producers[0])] = find(op)
    members: dict[Any, list] = {}
    for op in runs:
        members.setdefault(find(op), []).append(op)
    closing = {}
    for top, inner in members.items():
        if len(inner) < 2:
            continue
        result = result_of(G, top)
        closing[("compact", top)] = (names[result].text if not G.nodes[result].get("label")
                                     else _expression_of(G, inner, names), inner)
    return _closed(G, closing)


def _expression_of(G: nx.MultiDiGraph, inner: list, names: dict) -> str:
    """How a run's result is computed from its operands, for a named result."""
    # value_names names a labelled value by its label; the run's own writing is
    # the expression of its last op's result as if it had no name.
    unnamed = G.copy()
    unnamed.nodes[result_of(G, inner[-1])]["label"] = None
    return value_names(unnamed, longest=_LONGEST)[result_of(G, inner[-1])].text


def _closed(G: nx.MultiDiGraph, closing: dict[Any, tuple[str, list]],
            drawn_open: list[str] = ()) -> nx.MultiDiGraph:
    """``G`` with each ``closing`` entry's ops (name, op ids) drawn as one op; the
    groups ``drawn_open`` are named in a note."""
    plans = {}
    kept_open = list(drawn_open)
    if closing:  # (what the plans are made from)
        roots = set(G.graph.get("roots", ()))
        step_of = {op: k for k, op in enumerate(G.graph.get("backward_order", ()))}
        position = {node: k for k, node in enumerate(G)}
    for name, inner in closing.values():
        module = name if name in G.graph.get("module_groups", ()) else None
        plan = _plan(G, inner, roots, step_of, position, module)
        if plan is not None:
            plans[plan["id"]] = (name, plan)
        elif len(inner) > 1:
            kept_open.append(name)
    if _hold_parameters(G, [plan["held"] for _, plan in plans.values()]):
        for _, plan in plans.values():
            _holding(plan)
    notes = [f"the group {name!r} is drawn op by op: it makes more than one value that "
             "is used outside it, and an operator has one result" for name in kept_open]
    told = G.graph.get("remarks", [])
    if any(note not in told for note in notes):
        G = G.copy()
        G.graph["remarks"] = [*told, *(note for note in notes if note not in told)]
    if not plans:
        return G
    hidden = {node for _, plan in plans.values() for node in plan["hidden"]}
    H = nx.MultiDiGraph()
    H.graph.update(G.graph)
    drawn_as = {op: gid for gid, (_, plan) in plans.items() for op in plan["ops"]}
    order: dict[Any, None] = {}
    for op in G.graph.get("backward_order", ()):
        drawn = drawn_as.get(op, op)
        order.pop(drawn, None)  # a group's step is when its last op is done
        order[drawn] = None
    H.graph["backward_order"] = list(order)
    if G.graph.get("loop_rest_after") in drawn_as:  # (a rolled loop's closing step follows
        # the op its last op is drawn in)
        H.graph["loop_rest_after"] = drawn_as[G.graph["loop_rest_after"]]
    for node, attrs in G.nodes(data=True):
        if node in plans:
            name, plan = plans[node]
            H.add_node(node, kind="op", op=ops.GROUP.name, symbol=name,
                       # the IR's ops, a group's inside it (a compact run may hold one)
                       members=[member for op in sorted(plan["ops"], key=position.get)
                                for member in G.nodes[op].get("members", [op])],
                       **_parameters(G, plan, name),
                       **{key: G.nodes[node][key] for key in ("group", "group_calls")
                          if key in G.nodes[node]},
                       **_kept_by(G, sorted(plan["ops"], key=position.get), hidden))
        elif node not in hidden:
            H.add_node(node, **attrs)
    for op, kind in G.nodes(data="kind"):
        if kind != "op" or op in hidden:
            continue
        if op in plans:
            for arg, (u, grad, running) in enumerate(plans[op][1]["operands"]):
                H.add_edge(u, op, key=arg, arg=arg, grad=grad, running=running)
        else:
            for u, v, k in operand_edges(G, op):
                H.add_edge(u, v, key=k, **G.edges[u, v, k])
        result = result_of(G, op)
        H.add_edge(op, result, key=0, **G.edges[op, result, 0])
    return H


def _kept_by(G: nx.MultiDiGraph, inner: Iterable, hidden: set) -> dict[str, Any]:
    """What the ops ``inner`` (in graph order) keep for backward, as their group op keeps
    it: the values still drawn (``saves``), and the bytes of those inside (``inner_bytes``)."""
    kept = dict.fromkeys(value for op in inner for value in saved_values(G, op))
    inside = sum(value_bytes(G.nodes[value]) for value in kept if value in hidden)
    inside += sum(int(G.nodes[op].get("inner_bytes") or 0) for op in inner)
    return {"saves": [value for value in kept if value not in hidden],
            **({"inner_bytes": inside} if inside else {})}


def _hold_parameters(G: nx.MultiDiGraph, held: list[list]) -> bool:
    """Whether the modules of a view hold their parameters: when one of them has more
    than two, or one whose box could not show all its numbers (an axis longer than
    MAX_ITEMS, more than two axes). A lecture shows such a model's modules as blocks,
    each with the norm of its parameters' gradients (the number gradient clipping
    reads); a small one's weights are worth their tables, so all of them stay boxes."""
    def in_full(value: Any) -> bool:
        shape = tuple(G.nodes[value].get("shape", ()))
        return len(shape) <= 2 and all(n <= MAX_ITEMS for n in shape)

    return any(len(values) > 2 or not all(map(in_full, values)) for values in held)


def _holding(plan: dict) -> None:
    """``plan`` (_plan's) with its module's parameters inside its operator: hidden, and
    no longer operands."""
    held = set(plan["held"])
    plan["hidden"] |= held
    plan["operands"] = [operand for operand in plan["operands"] if operand[0] not in held]
    plan["holds"] = plan["held"]


def _parameters(G: nx.MultiDiGraph, plan: dict, module: str) -> dict[str, Any]:
    """A module operator's attributes for the parameters it holds (_holding): their ids,
    their names inside the module (``conv1.weight``) and their gradients, as the engine
    held them."""
    holds = plan.get("holds")
    if not holds:
        return {}
    return {"parameters": list(holds),
            "parameter_names": [G.nodes[value]["label"][len(module) + 1:] for value in holds],
            "parameter_grads": [G.nodes[value]["grad"] for value in holds]}


def _outputs(G: nx.MultiDiGraph, inner: set, roots: set) -> list:
    """The values the ops ``inner`` make that are used outside them (or are roots)."""
    return [v for v in map(functools.partial(result_of, G), inner)
            if v in roots or any(w not in inner for w in G._succ[v])]


def _plan(G: nx.MultiDiGraph, inner: Iterable, roots: set, step_of: dict,
          position: dict, module: str | None = None) -> dict | None:
    """How the ops ``inner`` are drawn as one: None if they make more than one
    value that is used outside them (a group op has one result). A torch ``module``'s
    own buffers (``model.bn1.running_mean``: no gradient, used only inside) are part
    of its operator, as a number written inside a group is."""
    inner = set(inner)
    made = {result_of(G, op): op for op in inner}
    outputs = _outputs(G, inner, roots)
    if len(outputs) != 1:
        return None
    top = made[outputs[0]]
    # A number used only inside is part of the group: unnamed (the 2 of "/ 2") or
    # named by the arithmetic that made it (λ/2), not by a variable of the script (y).
    absorbed = {u for op in inner for u, _, _ in operand_edges(G, op)
                if u not in made and not G._pred[u] and G.nodes[u].get("role") == "const"
                and not (G.nodes[u].get("label") or "").isidentifier()
                and set(G.successors(u)) <= inner} | {
        u for op in inner for u, _, _ in operand_edges(G, op)
        if module and not G._pred[u] and G.nodes[u].get("role") == "input"
        and G.nodes[u].get("grad") is None
        and (G.nodes[u].get("label") or "").startswith(module + ".")
        and set(G.successors(u)) <= inner}
    # Its parameters (model.fc.weight: a gradient, used only inside), which a view of
    # big modules holds inside their operators (_hold_parameters).
    held = {u: None for op in sorted(inner, key=position.get) for u, _, _ in operand_edges(G, op)
            if module and not G._pred[u] and G.nodes[u].get("role") == "param"
            and G.nodes[u].get("grad") is not None
            and (G.nodes[u].get("label") or "").startswith(module + ".")
            and set(G.successors(u)) <= inner}
    entering: dict[Any, list] = {}
    for op in sorted(inner, key=position.get):
        for edge in operand_edges(G, op):
            if edge[0] not in made and edge[0] not in absorbed:
                entering.setdefault(edge[0], []).append(edge)
    operands = []
    for u, edges in entering.items():
        grads = [G.edges[edge].get("grad") for edge in edges]
        known = [np.asarray(grad, dtype=np.float64) for grad in grads if grad is not None]
        total = plain_number(sum(known[1:], known[0])) if known else None
        done = [edge for edge in edges if G.edges[edge].get("running") is not None]
        last = max(done, key=lambda edge: step_of.get(edge[1], -1)) if done else None
        operands.append((u, total, G.edges[last]["running"] if last else None))
    return {"id": top, "ops": inner,
            "hidden": (inner - {top}) | (set(made) - {outputs[0]}) | absorbed,
            "operands": operands, "held": list(held)}
