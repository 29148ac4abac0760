"""Engines written elsewhere: the IR of a micrograd-style Value class, as that engine computed it.

A node of such an engine is any object with a number in ``data``, a
``grad``, a collection of children (``_prev``, ``_children``, ``prev``,
``children``, ``_parents`` or ``parents``) and an op tag for results
(``_op`` or ``op``: micrograd's ``"+"``, ``"*"``, ``"**2"``, ``"ReLU"``…,
mapped to the registry's ops; an unknown tag is drawn as itself). The
micrograd package, the lecture's hand-written class and a student's own all
qualify.

Nothing is recomputed for the picture. The gradients are the engine's own:
the script's last ``backward()`` is watched as it runs (foreign_nodes), each
node's chain rule wrapped, so each operand edge carries what that engine's
rule really added, in the order it really ran, and every value is drawn as
that run found it (a value the script updates afterwards, ``p.data -= lr *
p.grad``, is drawn as used, with the update noted). A number an operator
wrapped in a node (micrograd's ``y - 1.0``) is drawn as a constant. Where the
script's run was not seen (the Python API), ``backward()`` is run once more,
watched, and the gradients the script left are checked against that run.
A children *set* loses order and repeats: the order of operands
is taken from the graph itself (names, then structure, never ``id()``), so a
script draws the same on every run; a non-commutative op's operands are
ordered so that the op gives the engine's own result; ``a + a`` stored as
one child is drawn with its two edges, and the legend says so.
"""

from __future__ import annotations

import math
import os
import re
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from . import ops
from .builder import Builder, Producer, attribute_names, listed_parameters
from .engine import EngineError, Node, Value, apply, local_gradients
from .foreign_nodes import (
    CHILD_ATTRS,
    OBSERVED,
    Event,
    ForeignError,
    Run,
    children_attr,
    collect,
    digests,
    finish_run,
    looks_like_node,
    number,
    postorder,
    start_run,
    tag_of,
)
from .formatting import changed_note, display_number

__all__ = ["CHILD_ATTRS", "PRODUCER", "TAGS", "ForeignError", "ForeignGraph", "children_attr",
           "collect", "from_objects", "from_tag",
           "looks_like_node", "near_miss", "number", "read_graph", "to_ir"]


def near_miss(obj: Any) -> str | None:
    """For an object shaped like a node but lacking part of one, what it lacks."""
    if isinstance(obj, (type, Node)) or looks_like_node(obj):
        return None
    children = children_attr(obj)
    if children is None:
        return None
    missing = [name for name in ("data", "grad") if not hasattr(obj, name)]
    if not missing:
        return None
    held = [f".{name}" for name, value in getattr(obj, "__dict__", {}).items()
            if type(value) in (int, float) and name not in ("data", "grad")]
    keeps = f" (it keeps numbers in {', '.join(held[:3])})" if held else ""
    return (f"a {type(obj).__name__} has {children} like a Value but no "
            f"{' and no '.join('.' + name for name in missing)}, so it is not drawn as a "
            f"node{keeps}: name its number data and its gradient grad, or give the class "
            "properties data and grad that return them, as micrograd's Value has")


# The op tags micrograd-style engines give their results (micrograd's ``_op``), by
# canonical op (ops.py); a power's tag carries its exponent (micrograd's f"**{n}",
# others "^2" or "pow").
TAGS = {"add": ("+",), "sub": ("-", "−"), "mul": ("*", "×"), "div": ("/", "÷"),
        "neg": ("neg", "-", "−"), "matmul": ("@",), "relu": ("ReLU", "relu"),
        "dropout": ("dropout",), "tanh": ("tanh",), "exp": ("exp",), "log": ("log",),
        "sigmoid": ("sigmoid", "σ"), "sqrt": ("sqrt", "√")}
_BY_TAG: dict[str, list[str]] = {}
for _op, _tags in TAGS.items():
    for _one in _tags:
        _BY_TAG.setdefault(_one, []).append(_op)
        _BY_TAG.setdefault(_one.lower(), []).append(_op)
_POWER_TAG = re.compile(r"(?:\*\*|\^|pow)\s*(-?\d+(?:\.\d*)?(?:e-?\d+)?)?")


def from_tag(tag: str, arity: int | None = None) -> tuple[str, float | None]:
    """The canonical op and exponent of another engine's op tag: ``"*"`` -> mul,
    ``"**2"`` -> (pow, 2.0), ``"-"`` -> sub, or neg with one operand; an unknown
    tag is its own op name."""
    tag = tag.strip()
    power = _POWER_TAG.fullmatch(tag)
    if power and tag not in _BY_TAG:
        return "pow", None if power.group(1) is None else float(power.group(1))
    names = _BY_TAG.get(tag) or _BY_TAG.get(tag.lower())
    if not names:
        return tag, None
    fitting = [name for name in names if arity in ops.get(name).forms]
    return (fitting or names)[0], None


@dataclass
class ForeignGraph:
    """An engine's object graph, read: order, operands, ops and its backward run.

    ``order`` lists the nodes operands first; ``operands[n]`` are an op
    result's children in argument order (a repeated child twice);
    ``events`` is the watched backward run (None when it could not be
    watched), ``grads`` the gradients to draw (None without backward).
    """

    roots: list[Any]
    order: list[Any]
    operands: dict[Any, list[Any]]
    ops: dict[Any, tuple[str, float | None]]
    names: dict[Any, str]
    reconstructed: set = field(default_factory=set)
    params: set = field(default_factory=set)
    script_ran: bool = False  # whether the script had run backward before it was read
    value_ids: dict = field(default_factory=dict)  # node -> IR id, set by to_ir
    inconsistency: str | None = None  # why the script's gradients are not one backward's
    events: list[Event] | None = None
    grads: dict[Any, float] | None = None
    notes: list[str] = field(default_factory=list)
    used: dict[Any, float] = field(default_factory=dict)  # data as backward() found it
    updated: dict[Any, float] = field(default_factory=dict)  # data changed since: now
    held: dict[Any, float] = field(default_factory=dict)  # .grad before the last backward()
    constants: set = field(default_factory=set)  # numbers an operator wrapped in a node
    unwatched: str | None = None  # why no chain rule could be watched

    def index(self) -> dict[Any, int]:
        return {node: i for i, node in enumerate(self.order)}

    def data(self, node: Any) -> float:
        """A node's number as the forward pass used it (before any update)."""
        used = self.used.get(node)
        return number(node, "data") if used is None else used


def read_graph(*roots: Any, names: Mapping[str, Any] | None = None,
               backward: bool = True) -> ForeignGraph:
    """The graph below ``roots`` (an engine's nodes), named by ``names`` (a namespace).

    With ``backward``, the engine's own ``backward()`` runs from the first
    root, watched (see the module's docstring).
    """
    for root in roots:
        if not looks_like_node(root):
            raise ForeignError(f"a root must be a node (with .data, .grad and children), "
                               f"got {type(root).__name__}")
    name_of: dict[int, str] = {}
    rank_of: dict[int, int] = {}
    for position, (name, obj) in enumerate((names or {}).items()):
        if not name.startswith("_") and looks_like_node(obj):
            name_of.setdefault(id(obj), name)
            rank_of.setdefault(id(obj), position)
    kept = set()  # what an object keeps in its attributes: a model's weights, n.w[0]
    for key, path in attribute_names(names or {}, looks_like_node).items():
        name_of.setdefault(key, path)
        if "." in path:
            kept.add(key)
    nodes, children = collect(roots)
    graph = ForeignGraph(list(dict.fromkeys(roots)), [], {}, {}, {})
    last = OBSERVED.last_run()  # the script's last backward(), as it ran
    graph.used = {node: last.used[node] for node in nodes if last and node in last.used}
    for node in nodes:
        label = getattr(node, "label", None)
        if isinstance(label, str) and label:
            graph.names[node] = label  # an explicit label wins over the variable name
        elif id(node) in name_of:
            graph.names[node] = name_of[id(node)]
    graph.constants = {node for node in nodes if not children[node] and node not in graph.names
                       and OBSERVED.made_by_op(node)}
    ordered = {node for node in children if _ordered(node)}
    places = _parameters(names or {}, set(children))
    graph.order, rank = _stable_order(graph, children, rank_of, ordered, places)
    index = graph.index()
    for node in graph.order:
        if children[node]:
            # (by their earliest named descendant, then where the graph first reached
            # them: a loop's repetitions then take their operands alike, w·h before u·x
            # before b, though the first repetition reached b before the others' w·h)
            kids = children[node] if node in ordered else sorted(
                children[node], key=lambda kid: (rank[kid], index[kid]))
            _read_op(graph, node, kids, ordered=node in ordered)
    graph.params = set(places) | {node for node in nodes if not children[node]
                                  and id(node) in kept and node not in graph.constants}
    _note_updates(graph)
    if backward and last is not None and last.root is graph.roots[0]:
        _use_run(graph, last)
    elif backward:
        _watch_backward(graph, children)
    return graph


def _ordered(node: Any) -> bool:
    """Whether a node keeps its children in order (a tuple or list, not a set)."""
    return isinstance(getattr(node, children_attr(node)), (tuple, list))


def _stable_order(graph: ForeignGraph, children: dict[Any, list[Any]],
                  rank_of: dict[int, int], ordered: set,
                  places: Mapping[Any, str]) -> tuple[list[Any], dict[Any, float]]:
    """Operands before results, in an order read from the graph alone; and each node's
    rank, the script's place of its earliest named descendant.

    Children kept in a tuple or list go in their order; those in a set by
    the script's order of names (a node without one: its earliest named
    descendant), then by a digest of what they are (op tag, label, the same of
    their children; data only where that ties, or for an unnamed leaf): never by
    ``id()``, so a set's iteration order does not matter, nor the numbers a
    training loop's update changes between passes (a parameter without a name is
    told by its place in its model's ``parameters()``, in ``places``).
    """
    rank: dict[Any, float] = {}
    for node in postorder(graph.roots, children, key=None):
        own = rank_of.get(id(node), math.inf)
        rank[node] = min([own, *(rank[kid] for kid in children[node])])
    data = {node: graph.data(node) for node in children}
    known = {**places, **graph.names}
    digest = digests(graph.roots, children, data, known)
    full = digests(graph.roots, children, data, known, all_data=True)

    def key(node: Any) -> tuple:
        return rank[node], digest[node], full[node]
    return postorder(graph.roots, children, key=key, ordered=ordered), rank


def _parameters(names: Mapping[str, Any], nodes: set) -> dict[Any, str]:
    """The nodes a model in the script lists as its ``parameters()`` (micrograd's nn),
    each with its place there (``model.parameters()[3]``; the first model's)."""
    return {p: place for p, place in listed_parameters(names).values()
            if looks_like_node(p) and p in nodes}


def _read_op(graph: ForeignGraph, node: Any, kids: list[Any], ordered: bool) -> None:
    """The op of a result, and its operands in argument order: as the engine keeps
    them, or (from a set) in graph order, turned where the data says so."""
    name, exponent = from_tag(tag_of(node), len(kids))
    data = graph.data(node)
    spec = ops.get(name)
    arity = set(spec.forms)
    used = [graph.data(kid) for kid in kids]
    twice, _ = from_tag(tag_of(node), 2)  # (a tag of one child read as of two: "-", sub)
    if len(kids) == 1 and 2 in ops.get(twice).forms and _gives(twice, used * 2, data) and (
            1 not in arity or not _gives(name, used, data, exponent)):
        # a + a, a * a, a − a: a set keeps one child; the data says it was used twice
        # (a − a, 0, is not the negation of a, which one child alone would read).
        name, exponent, kids = twice, None, [kids[0], kids[0]]
        graph.reconstructed.add(node)
    elif (not ordered and len(kids) == 2 and not spec.commutative
          and not _gives(name, used, data) and _gives(name, used[::-1], data)):
        kids = kids[::-1]  # the order in which the op gives the engine's own result
    graph.ops[node] = (name, exponent)
    graph.operands[node] = kids


def _used_twice(graph: ForeignGraph) -> str:
    """The ops of the graph that use one value twice, as written: ``diff × diff`` (``a +
    a`` if there is none)."""
    found = []
    for node in graph.order:
        if node in graph.reconstructed:
            name, exponent = graph.ops[node]
            operand = graph.names.get(graph.operands[node][0]) or "a"
            found.append(f"{operand} {ops.get(name).symbol_for(exponent)} {operand}")
    return ", ".join(dict.fromkeys(found)) or "a + a"


def _gives(op: str, operands: list[float], data: float, exponent: float | None = None) -> bool:
    """Whether the reference engine's ``op`` of the ``operands`` is ``data``."""
    try:
        result = apply(op, [Value(operand) for operand in operands], exponent).data
    except (EngineError, TypeError, ValueError, ArithmeticError):
        return False
    return result == data or math.isclose(result, data, rel_tol=1e-12, abs_tol=1e-300)


# ---------------------------------------------------------------- backward


def _use_run(graph: ForeignGraph, run: Run) -> None:
    """Draw the script's own backward() as it was watched; say what changed since."""
    graph.script_ran = True
    graph.events, graph.grads = run.events, run.after
    _unwatched(graph, run)
    root = graph.roots[0]
    earlier = [node for node in graph.order if node is not root and run.before.get(node)]
    graph.held = {node: run.before[node] for node in earlier}
    if earlier:
        if run.passes > 1:
            graph.inconsistency = f"backward() ran {run.passes} times and the gradients added up"
        else:
            first = earlier[0]
            graph.inconsistency = (
                f"the last backward() added to gradients an earlier one left "
                f"({graph.names.get(first, 'a value')} held "
                f"{display_number(run.before[first])}); reset "
                "them (p.grad = 0) before each backward()")
        graph.notes.append(f"gradients as .grad holds them ({graph.inconsistency}); the edges "
                           "show the last backward()'s shares")
    changed = [node for node in graph.order if node in run.after
               and not _close(number(node, "grad"), run.after[node])]
    if changed:
        who = graph.names.get(changed[0], "a value")
        graph.notes.append(f"gradients as the last backward() left them ({who}.grad is "
                           f"{number(changed[0], 'grad'):.6g} now: changed after it)")


def _note_updates(graph: ForeignGraph) -> None:
    """The values changed since the last backward() used them (``p.data -= lr * p.grad``)."""
    for node in graph.order:
        now = number(node, "data")
        if node in graph.used and not _close(graph.used[node], now):
            graph.updated[node] = now
    notes = [changed_note(graph.names.get(node), graph.used[node], now)
             for node, now in graph.updated.items()]
    if len(notes) > 3:  # a training loop's update: one note, not one a parameter
        notes = [f"{len(notes)} values changed after the update and are drawn as the forward "
                 f"pass used them, e.g. {notes[0].split(' after the update')[0]}"]
    graph.notes.extend(notes)


def _unwatched(graph: ForeignGraph, run: Run) -> None:
    if run.unwatched:
        graph.unwatched = run.unwatched
        graph.notes.append(run.unwatched)


def _watch_backward(graph: ForeignGraph, children: dict[Any, list[Any]]) -> None:
    """Run the engine's backward() from the first root, watched (the script's own run
    was not seen: the Python API, a script that imports backpropviz too).

    While it runs, each children set iterates in graph order, so that the
    engine's own topological sort, and with it every running sum, comes out
    the same on every run. The gradients drawn are this run's; the ones the
    script left are checked against them, and left in place: if they differ,
    the run is repeated with every set in its own order, as the script's ran
    (an engine whose result depends on that order, e.g. = for += at a fork).
    """
    root = graph.roots[0]
    if not callable(getattr(root, "backward", None)):
        graph.notes.append("the engine has no backward(): forward values only")
        return
    left = {node: number(node, "grad") for node in graph.order}
    script_ran = graph.script_ran = any(grad != 0 for grad in left.values())
    index = graph.index()
    run = _rerun(root, children, index.__getitem__)
    _unwatched(graph, run)
    graph.events, graph.grads = run.events, run.after
    if not script_ran:
        return  # backward is run for the script, as for an engine script
    if not all(_close(run.after[node], grad) for node, grad in left.items()):
        run = _rerun(root, children, None)
        graph.events, graph.grads = run.events, run.after
    for node, grad in left.items():
        node.grad = grad  # leave the script's objects as it left them
    if all(_close(run.after[node], grad) for node, grad in left.items()):
        return
    graph.grads, graph.events = left, None
    graph.inconsistency = _why_different(graph, left, run.after)
    graph.notes.append(f"gradients as the script left them ({graph.inconsistency}), so the "
                       "edges' shares are not drawn")


def _rerun(root: Any, children: dict[Any, list[Any]], order_key: Any) -> Run:
    """The engine's backward() from ``root`` run again from zero gradients, watched."""
    for node in children:
        node.grad = 0.0
    run, restore = start_run(root, children, order_key)
    try:
        root.backward()
    except Exception as error:
        raise ForeignError(f"the engine's backward() failed: {_where(error)}") from None
    finally:
        finish_run(run, restore)
    return run


def _why_different(graph: ForeignGraph, left: dict, ran: dict) -> str:
    """Why the gradients the script left are not those of one backward() from the root."""
    root = graph.roots[0]
    # Run twice (or more) without zeroing, gradients add up: the engine itself
    # says how, when its backward runs that many times from zero.
    repeated = 0
    for passes in (2, 3, 4):
        for node in graph.order:
            node.grad = 0.0
        try:
            for _ in range(passes):
                root.backward()
        except Exception:  # a failing backward is not the cause looked for
            break
        if all(_close(number(node, "grad"), grad) for node, grad in left.items()):
            repeated = passes
            break
    for node, grad in left.items():
        node.grad = grad
    if repeated:
        passes = repeated
        return f"backward() ran {passes} times and the gradients added up"
    if not _close(left[root], ran[root]):
        name = graph.names.get(root, "the drawn output")
        return f"backward() was not called on {name}: its gradient came from a later value"
    return "values changed after backward(), e.g. an update p.data -= lr * p.grad"


def _close(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9,
                                                                       abs_tol=1e-300)


def _where(error: BaseException) -> str:
    """An exception raised in a script's code, with the file and line it came from."""
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return (f"{type(error).__name__}: {error} ({os.path.basename(frame.filename)}, "
            f"line {frame.lineno})")


# ---------------------------------------------------------------- the IR


def from_objects(*roots: Any, names: Mapping[str, Any] | None = None,
                 backward: bool = True) -> nx.MultiDiGraph:
    """The IR of an engine's graph below ``roots``: ``to_ir(read_graph(...))``."""
    return to_ir(read_graph(*roots, names=names, backward=backward))


def to_ir(graph: ForeignGraph) -> nx.MultiDiGraph:
    """The IR of a read graph: values, ops, and the watched run's contributions."""
    sent: dict[Any, list[float]] = {}
    sums: dict[Any, list[float]] = {}
    processed: dict[Any, int] = {}
    seeds: dict[Any, float] = {}
    halved = False  # (a child on two edges whose shares could only be halved)
    if graph.events is not None:
        for step, event in enumerate(graph.events):
            if event.node not in graph.operands:
                continue
            kids = graph.operands[event.node]
            held = {kid: (before, after) for kid, before, after in event.children}
            shares, running, guessed = _edge_shares(kids, held,
                                                    _rule(graph, event.node, event.upstream))
            halved |= guessed
            previous = sent.get(event.node)
            sent[event.node] = shares if previous is None else [
                a + b for a, b in zip(previous, shares, strict=True)]
            sums[event.node] = running
            processed[event.node] = step
        first = next((event for event in graph.events if event.node is graph.roots[0]), None)
        seeds[graph.roots[0]] = first.upstream if first is not None else \
            number(graph.roots[0], "grad")
    params = graph.params
    build = Builder()
    roots = set(graph.roots)
    for node in graph.order:
        kids = graph.operands.get(node)
        if kids:
            name, exponent = graph.ops[node]
            attrs: dict[str, Any] = {}
            if node in graph.reconstructed:
                attrs["reconstructed"] = True
            dead = ops.dead_units(name, graph.data(kids[0]))
            if dead is not None:
                attrs["dead"] = dead
            build.add_op(node, name, kids, exponent=exponent, sent=sent.get(node),
                         running=sums.get(node), **attrs)
        # An unnamed leaf is an input (another engine's weights in plain lists, whose
        # gradients are the lesson), unless an operator made it: a number it wrapped.
        role = ("output" if node in roots else "intermediate" if kids
                else "param" if node in params else "const" if node in graph.constants
                else "input")
        grad = None if graph.grads is None else graph.grads[node]
        held = {"held_before": graph.held[node]} if node in graph.held else {}
        build.add_value(node, label=graph.names.get(node), data=graph.data(node),
                        grad=grad, shape=(), role=role, made_by=node if kids else None,
                        live=None if kids else (node, _data_now), **held)
    graph.value_ids = build.value_ids
    notes = list(graph.notes)
    twice = _used_twice(graph)
    if halved:
        notes.append(f"a value used twice by one op ({twice}) is kept once in the engine's "
                     "children set, and what its backward sent it is not the rule's two "
                     "shares, added or set in turn: both edges are drawn, each with half")
    elif graph.reconstructed:
        notes.append(f"a value used twice by one op ({twice}) is kept once in the engine's "
                     "children set; both edges are drawn, each with the rule's share, "
                     "as the engine's backward added or set them in turn")
    unwatched = {"unwatched": graph.unwatched} if graph.unwatched else {}
    return build.finish(graph.roots, backward_order=sorted(processed, key=processed.get),
                        seeds=seeds, notes=notes, **unwatched)


def _rule(graph: ForeignGraph, node: Any, upstream: float) -> list[float] | None:
    """What the reference engine's rule for ``node``'s op sends each of its edges when
    ``upstream`` arrives (None where the reference does not have the op)."""
    name, exponent = graph.ops[node]
    try:
        result = apply(name, [Value(graph.data(kid)) for kid in graph.operands[node]],
                       exponent)
        return [float(share) for share in local_gradients(result, upstream)]
    except (EngineError, TypeError, ValueError, KeyError, ArithmeticError):
        return None


def _edge_shares(kids: list, held: dict, rule: list[float] | None
                 ) -> tuple[list[float], list[float], bool]:
    """Each edge's share and the running sum after it, from each child's gradient
    before and after its op's backward call (``held``); and whether a share was guessed.

    A child on one edge got what its gradient changed by. A child on several (``h * h``,
    kept once in a children set) is seen only before and after all of them: where that
    is the rule's shares added in turn (``+=``), or set in turn (``=``, the last one
    left), the edges carry those, and the sums it held in between; otherwise each edge
    carries an equal part of the change (guessed, and said in a note)."""
    shares: list[float] = []
    running: list[float] = []
    guessed = False
    for kid in dict.fromkeys(kids):
        edges = [i for i, other in enumerate(kids) if other is kid]
        before, after = held[kid]
        rules = None if rule is None else [rule[i] for i in edges]
        # (an engine that sets the gradient to its share, = where += belongs, sent each
        # share it set: the edge carries that, not what the gradient changed by)
        sets = rules is not None and not _close(after, before + sum(rules)) \
            and _close(after, rules[-1])
        if len(edges) == 1:
            steps = [after]
        elif rules is not None and _close(after, before + sum(rules)):
            steps = [*(before + sum(rules[:n + 1]) for n in range(len(edges) - 1)), after]
        elif sets:
            steps = [*rules[:-1], after]
        else:
            part = (after - before) / len(edges)
            steps = [*(before + part * (n + 1) for n in range(len(edges) - 1)), after]
            guessed = True
        for i, (was, now) in zip(edges, zip([before, *steps], steps, strict=False),
                                 strict=True):
            shares.append((i, now if sets else now - was))
            running.append((i, now))
    return ([share for _, share in sorted(shares)], [now for _, now in sorted(running)],
            guessed)


def _data_now(node: Any) -> float:
    """A leaf's number now (the script may have updated it since the pass)."""
    return number(node, "data")


class ForeignProducer(Producer):
    """Another engine's Value class (micrograd's, a lecture's, a student's): its backward
    runs, watched, when its graph is read."""

    name = "micrograd-style engine"
    reads_backward = True

    def claims(self, obj: Any, recording: Any = None) -> bool:
        return looks_like_node(obj)

    def near_miss(self, obj: Any) -> str | None:
        return near_miss(obj)

    def walk(self, nodes: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
        _, children = collect(nodes.values())  # checked: nodes, no cycle
        return ({name: node for name, node in nodes.items() if children[node]},
                children.__getitem__)

    def build(self, roots: Any, names: Mapping[str, Any] | None, recording: Any,
              backward: bool) -> nx.MultiDiGraph:
        return from_objects(*roots, names=names, backward=backward)


PRODUCER = ForeignProducer()
