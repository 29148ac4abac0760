"""Engines written elsewhere: the IR of a micrograd-style Value class, as that engine computed it.

A node of such an engine is any object with a number in ``data``, a
``grad``, a collection of children (``_prev``, ``_children``, ``prev``,
``children``, ``_parents`` or ``parents``) and an op tag for results
(``_op`` or ``op``: micrograd's ``"+"``, ``"*"``, ``"**2"``, ``"ReLU"``…,
mapped to the registry's ops; an unknown tag is drawn as itself). The
micrograd package, the lecture's hand-written class and a student's own all
qualify.

Nothing is recomputed for the picture. The gradients are the engine's own:
its ``backward()`` is run once more with every node's ``_backward`` watched,
so each operand edge carries what that engine's rule really added, in the
order it really ran (and the gradients the script left are checked against
that run). A children *set* loses order and repeats: the order of operands
is taken from the graph itself (names, then structure, never ``id()``), so a
script draws the same on every run; a non-commutative op's operands are
ordered so that the op gives the engine's own result; ``a + a`` stored as
one child is drawn with its two edges, and the legend says so.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import os
import re
import traceback
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from . import ops
from .builder import Builder, Producer
from .engine import EngineError, Node, Value, apply
from .errors import BackpropvizError

__all__ = ["CHILD_ATTRS", "PRODUCER", "TAGS", "ForeignError", "ForeignGraph", "children_attr",
           "collect", "from_objects", "from_tag",
           "looks_like_node", "near_miss", "number", "read_graph", "to_ir"]

CHILD_ATTRS = ("_prev", "_children", "prev", "children", "_parents", "parents")
TAG_ATTRS = ("_op", "op")
_COLLECTIONS = (set, frozenset, tuple, list)


class ForeignError(BackpropvizError):
    """An object graph that looks like an engine's but cannot be read as one."""


def children_attr(obj: Any) -> str | None:
    """The name of the attribute that holds ``obj``'s children, if it has one."""
    for name in CHILD_ATTRS:
        try:
            children = getattr(obj, name, None)
        except Exception:  # a property that fails is not a children collection
            continue
        if isinstance(children, _COLLECTIONS):
            return name
    return None


def looks_like_node(obj: Any) -> bool:
    """Whether ``obj`` is a node of a micrograd-style engine (not backpropviz's own)."""
    if isinstance(obj, (type, Node, numbers.Number, str)):
        return False
    try:
        return (children_attr(obj) is not None and hasattr(obj, "data")
                and hasattr(obj, "grad"))
    except Exception:
        return False


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
    return (f"a {type(obj).__name__} has {children} like a Value but no "
            f"{' and no '.join('.' + name for name in missing)}, so it is not drawn as a node")


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


def _tag(obj: Any) -> str:
    for name in TAG_ATTRS:
        tag = getattr(obj, name, None)
        if isinstance(tag, str):
            return tag
    return ""


def number(obj: Any, attribute: str) -> float:
    """``obj.<attribute>`` as a float, or ForeignError naming the attribute."""
    value = getattr(obj, attribute)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ForeignError(f"a {type(obj).__name__}'s .{attribute} is "
                           f"{type(value).__name__}, not a number") from None


@dataclass
class Event:
    """One call of a node's ``_backward``: its gradient then, each child's before and after."""

    node: Any
    upstream: float
    children: list[tuple[Any, float, float]]


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

    def index(self) -> dict[Any, int]:
        return {node: i for i, node in enumerate(self.order)}


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
    nodes, children = collect(roots)
    graph = ForeignGraph(list(dict.fromkeys(roots)), [], {}, {}, {})
    for node in nodes:
        label = getattr(node, "label", None)
        if isinstance(label, str) and label:
            graph.names[node] = label  # an explicit label wins over the variable name
        elif id(node) in name_of:
            graph.names[node] = name_of[id(node)]
    ordered = {node for node in children if _ordered(node)}
    graph.order = _stable_order(graph.roots, children, graph.names, rank_of, ordered)
    index = graph.index()
    for node in graph.order:
        if children[node]:
            kids = children[node] if node in ordered else sorted(children[node],
                                                                key=index.__getitem__)
            _read_op(graph, node, kids, ordered=node in ordered)
    graph.params = _parameters(names or {}, set(children))
    if backward:
        _watch_backward(graph, children)
    return graph


def collect(roots: Iterable[Any]) -> tuple[list[Any], dict[Any, list[Any]]]:
    """Every node below the roots and its children, checked: nodes only, no cycle."""
    children: dict[Any, list[Any]] = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in children:
            continue
        attribute = children_attr(node)
        kids = list(getattr(node, attribute)) if attribute else []
        for kid in kids:
            if not looks_like_node(kid):
                raise ForeignError(f"a {type(node).__name__}'s .{attribute} holds a "
                                   f"{type(kid).__name__}, not a node with .data, .grad and "
                                   "children")
        children[node] = kids
        number(node, "data")
        stack.extend(kids)
    # A cycle: some node is below itself (iterative depth-first search).
    state: dict[Any, int] = {}
    for start in children:
        if start in state:
            continue
        path = [(start, iter(children[start]))]
        state[start] = 1
        while path:
            node, kids = path[-1]
            kid = next(kids, None)
            if kid is None:
                state[node] = 2
                path.pop()
            elif state.get(kid) == 1:
                raise ForeignError(f"the children of a {type(kid).__name__} (data "
                                   f"{number(kid, 'data'):g}) lead back to it: a graph of "
                                   "values has no cycles")
            elif kid not in state:
                state[kid] = 1
                path.append((kid, iter(children[kid])))
    return list(children), children


def _ordered(node: Any) -> bool:
    """Whether a node keeps its children in order (a tuple or list, not a set)."""
    return isinstance(getattr(node, children_attr(node)), (tuple, list))


def _stable_order(roots: list[Any], children: dict[Any, list[Any]], names: dict[Any, str],
                  rank_of: dict[int, int], ordered: set) -> list[Any]:
    """Operands before results, in an order read from the graph alone.

    Children kept in a tuple or list go in their order; those in a set by
    the script's order of names (a node without one: its earliest named
    descendant), then by a digest of what they are (op tag, data, label, the
    same of their children): never by ``id()``, so a set's iteration order
    does not matter.
    """
    rank: dict[Any, float] = {}
    digest: dict[Any, str] = {}
    for node in _postorder(roots, children, key=None):
        kids = children[node]
        own = rank_of.get(id(node), math.inf)
        rank[node] = min([own, *(rank[kid] for kid in kids)])
        text = repr((_tag(node), number(node, "data"), names.get(node),
                     sorted(digest[kid] for kid in kids)))
        digest[node] = hashlib.sha1(text.encode()).hexdigest()

    def key(node: Any) -> tuple:
        return rank[node], digest[node]
    return _postorder(roots, children, key=key, ordered=ordered)


def _postorder(roots: list[Any], children: dict[Any, list[Any]], key: Any,
               ordered: set = frozenset()) -> list[Any]:
    """Depth-first post-order from the roots (no recursion), children sorted by
    ``key`` unless the node keeps them ``ordered``."""
    done: dict[Any, None] = {}
    for root in roots:
        if root in done:
            continue
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if node in done:
                continue
            if expanded:
                done[node] = None
                continue
            stack.append((node, True))
            kids = (children[node] if key is None or node in ordered
                    else sorted(children[node], key=key))
            stack.extend((kid, False) for kid in reversed(kids) if kid not in done)
    return list(done)


def _parameters(names: Mapping[str, Any], nodes: set) -> set:
    """The nodes a model in the script lists as its ``parameters()`` (micrograd's nn)."""
    found: set = set()
    for name, obj in names.items():
        method = getattr(obj, "parameters", None)
        if name.startswith("_") or isinstance(obj, type) or not callable(method):
            continue
        try:
            listed = list(method())
        except Exception:  # not a model after all
            continue
        found.update(p for p in listed if looks_like_node(p) and p in nodes)
    return found


def _read_op(graph: ForeignGraph, node: Any, kids: list[Any], ordered: bool) -> None:
    """The op of a result, and its operands in argument order: as the engine keeps
    them, or (from a set) in graph order, turned where the data says so."""
    name, exponent = from_tag(_tag(node), len(kids))
    data = number(node, "data")
    spec = ops.get(name)
    arity = set(spec.forms)
    if len(kids) == 1 and 1 not in arity and 2 in arity and _gives(name, [kids[0]] * 2, data):
        # a + a, a * a: a set keeps one child; the data says it was used twice.
        kids = [kids[0], kids[0]]
        graph.reconstructed.add(node)
    elif (not ordered and len(kids) == 2 and not spec.commutative
          and not _gives(name, kids, data) and _gives(name, kids[::-1], data)):
        kids = kids[::-1]  # the order in which the op gives the engine's own result
    graph.ops[node] = (name, exponent)
    graph.operands[node] = kids


def _gives(op: str, kids: list[Any], data: float, exponent: float | None = None) -> bool:
    """Whether the reference engine's ``op`` of the children's data is ``data``."""
    try:
        result = apply(op, [Value(number(kid, "data")) for kid in kids], exponent).data
    except (EngineError, TypeError, ValueError, ArithmeticError):
        return False
    return result == data or math.isclose(result, data, rel_tol=1e-12, abs_tol=1e-300)


# ---------------------------------------------------------------- backward


def _watch_backward(graph: ForeignGraph, children: dict[Any, list[Any]]) -> None:
    """Run the engine's backward() from the first root with every _backward watched.

    While it runs, each children set iterates in graph order, so that the
    engine's own topological sort, and with it every running sum, comes out
    the same on every run. The gradients drawn are this run's; the ones the
    script left are checked against them, and left in place.
    """
    root = graph.roots[0]
    backward = getattr(root, "backward", None)
    if not callable(backward):
        graph.notes.append("the engine has no backward(): forward values only")
        return
    left = {node: number(node, "grad") for node in graph.order}
    script_ran = graph.script_ran = any(grad != 0 for grad in left.values())
    events: list[Event] = []
    originals = _wrap_backwards(graph.order, children, events)
    sets = _order_sets(graph, children)
    for node in graph.order:
        node.grad = 0.0
    try:
        backward()
    except Exception as error:
        raise ForeignError(f"the engine's backward() failed: {_where(error)}") from None
    finally:
        _unwrap_backwards(originals)
        for node, attribute, kept in sets:
            setattr(node, attribute, kept)
    ran = {node: number(node, "grad") for node in graph.order}
    graph.events = events if originals else None
    graph.grads = ran
    if not script_ran:
        return  # backward is run for the script, as for an engine script
    for node, grad in left.items():
        node.grad = grad  # leave the script's objects as it left them
    if all(_close(ran[node], grad) for node, grad in left.items()):
        return
    graph.grads, graph.events = left, None
    graph.inconsistency = _why_different(graph, left, ran)
    graph.notes.append(f"gradients as the script left them ({graph.inconsistency}), so the "
                       "edges' shares are not drawn")


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


class _InOrder(set):
    """A set that iterates in a given order: a node's children during the watched run."""

    def __init__(self, items: list[Any]) -> None:
        super().__init__(items)
        self._order = list(dict.fromkeys(items))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._order)


def _order_sets(graph: ForeignGraph, children: dict[Any, list[Any]]) -> list[tuple]:
    """Swap every children set for one in graph order; what to put back."""
    index = graph.index()
    swapped = []
    for node in graph.order:
        attribute = children_attr(node)
        kept = getattr(node, attribute)
        if not isinstance(kept, (set, frozenset)):
            continue
        try:
            setattr(node, attribute, _InOrder(sorted(children[node], key=index.__getitem__)))
        except (AttributeError, TypeError):
            continue  # a read-only attribute: its set iterates as it will
        swapped.append((node, attribute, kept))
    return swapped


def _wrap_backwards(order: list[Any], children: dict[Any, list[Any]],
                    events: list[Event]) -> list[tuple[Any, Any, bool]]:
    """Replace each node's _backward by a watcher; what to put back (empty: none could be)."""
    originals = []
    for node in order:
        original = getattr(node, "_backward", None)
        if not callable(original):
            continue
        own = "_backward" in getattr(node, "__dict__", {})
        kids = list(dict.fromkeys(children[node]))

        def watched(node: Any = node, original: Any = original, kids: list = kids) -> Any:
            upstream = number(node, "grad")
            before = [number(kid, "grad") for kid in kids]
            result = original()
            events.append(Event(node, upstream, [
                (kid, was, number(kid, "grad")) for kid, was in zip(kids, before, strict=True)]))
            return result
        try:
            node._backward = watched
        except (AttributeError, TypeError):  # __slots__ without _backward, a frozen class
            _unwrap_backwards(originals)
            return []
        originals.append((node, original, own))
    return originals


def _unwrap_backwards(originals: list[tuple[Any, Any, bool]]) -> None:
    for node, original, own in originals:
        if own:
            node._backward = original
        else:
            del node._backward  # the class's method shows through again


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
    if graph.events is not None:
        for step, event in enumerate(graph.events):
            if event.node not in graph.operands:
                continue
            delta = {kid: after - before for kid, before, after in event.children}
            kids = graph.operands[event.node]
            shares = [delta.get(kid, 0.0) / kids.count(kid) for kid in kids]
            previous = sent.get(event.node)
            sent[event.node] = shares if previous is None else [
                a + b for a, b in zip(previous, shares, strict=True)]
            # The running sums the engine held: each child's gradient after the
            # call (a child on two edges: after the first half, then after all).
            held = {kid: [before, after] for kid, before, after in event.children}
            sums[event.node] = []
            for kid, share in zip(kids, shares, strict=True):
                was, after = held[kid]
                last = kids.index(kid, kids.index(kid) + 1) if kids.count(kid) > 1 else None
                done = last is None or len(sums[event.node]) == last
                sums[event.node].append(after if done else was + share)
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
            dead = ops.dead_units(name, number(kids[0], "data"))
            if dead is not None:
                attrs["dead"] = dead
            build.add_op(node, name, kids, exponent=exponent, sent=sent.get(node),
                         running=sums.get(node), **attrs)
        # An unnamed leaf is an input: another engine's weights in plain lists look
        # just like the numbers its ops wrap, and their gradients are the lesson.
        role = ("output" if node in roots else "intermediate" if kids
                else "param" if node in params else "input")
        grad = None if graph.grads is None else graph.grads[node]
        build.add_value(node, label=graph.names.get(node), data=number(node, "data"),
                        grad=grad, shape=(), role=role, made_by=node if kids else None)
    graph.value_ids = build.value_ids
    notes = list(graph.notes)
    if graph.reconstructed:
        notes.append("a value used twice by one op (a + a) is kept once in the engine's "
                     "children set; both edges are drawn, each with half of what it sent")
    return build.finish(graph.roots, backward_order=sorted(processed, key=processed.get),
                        seeds=seeds, notes=notes)


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
