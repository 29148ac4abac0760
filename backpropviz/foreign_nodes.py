"""Another engine's nodes as objects: what makes one, its numbers and children, the
chain rule each result keeps, and its backward() watched while it runs.

A node is any object with a number in ``data``, a ``grad`` and a collection of
children (``_prev``, ``children``, ``parents``…). Its chain rule is found where
the engine keeps it, whatever the name: a function stored on each result that
uses ``.grad`` and holds the result or its children (micrograd's
``out._backward``, another's ``out.backward_fn`` or a ``__slots__`` class's
``_grad_fn``), or a method of the class named for it. Watching a backward()
wraps each rule to record what it added to each child, and lets every children
set iterate in an order read from the graph (never from ``id()``).

``OBSERVED`` is told by the watch of a running script (watch.py) when the script
calls another engine's backward(), which it watches as it runs, so the picture
shows the numbers that run used even if the script updates them later, and which
nodes an operator method made (the numbers micrograd wraps: ``y - 1.0``).
"""

from __future__ import annotations

import hashlib
import inspect
import numbers
import types
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .engine import Node
from .errors import BackpropvizError

__all__ = ["CHILD_ATTRS", "OBSERVED", "OPERATOR_METHODS", "TAG_ATTRS", "Event", "ForeignError",
           "Run", "children_attr", "collect", "digests", "finish_run", "looks_like_node",
           "number", "postorder", "rule_attribute", "start_run", "tag_of"]

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


def tag_of(obj: Any) -> str:
    """A result's op tag (micrograd's ``_op``), or "" for a leaf."""
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


def postorder(roots: list[Any], children: dict[Any, list[Any]], key: Any,
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


class _InOrder(set):
    """A set that iterates in a given order: a node's children during a watched run."""

    def __init__(self, items: list[Any]) -> None:
        super().__init__(items)
        self._order = list(dict.fromkeys(items))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._order)


@dataclass
class Run:
    """One backward() of an engine from ``root``, watched: the data its ops used
    (``used``), the gradients before and after, and each rule's call (``events``,
    None when no node's chain rule could be found: ``unwatched`` says why)."""

    root: Any
    children: dict[Any, list[Any]]
    used: dict[Any, float]
    before: dict[Any, float]
    after: dict[Any, float] | None = None
    events: list[Event] | None = None
    unwatched: str | None = None
    passes: int = 1  # backward() calls from this root in a row, this one included


# What a result of a micrograd-style engine calls its chain rule: micrograd's
# _backward, others' backward_fn, _grad_fn... (a method of the class must be named so).
_RULE_WORDS = ("backward", "grad_fn")
_NODE_FIELDS = {*CHILD_ATTRS, *TAG_ATTRS, "data", "grad", "label", "backward"}


def _code_names(code: types.CodeType) -> set[str]:
    """The attribute and global names a function's code uses, its inner functions' too."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _own_attributes(node: Any) -> Iterator[tuple[str, Any]]:
    """A node's attributes kept on the instance: its __dict__, then its __slots__."""
    yield from getattr(node, "__dict__", {}).items()
    for cls in type(node).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            try:
                yield name, getattr(node, name)
            except AttributeError:  # a slot never assigned
                continue


def _is_rule(value: Any, related: list[Any]) -> bool:
    """Whether ``value`` is a chain rule of the result: a function that reads or writes
    ``.grad`` and holds the result or one of its children (a closure, a bound method)."""
    if isinstance(value, types.MethodType):
        return any(value.__self__ is obj for obj in related) and \
            "grad" in _code_names(value.__func__.__code__)
    if not isinstance(value, types.FunctionType) or "grad" not in _code_names(value.__code__):
        return False
    for cell in value.__closure__ or ():
        try:
            held = cell.cell_contents
        except ValueError:  # a cell not yet filled
            continue
        if any(held is obj for obj in related):
            return True
    return False


def rule_attribute(node: Any, kids: list[Any]) -> tuple[str, bool] | None:
    """Where a result keeps its chain rule: (the attribute, whether on the instance), or
    None. An instance's own function that uses .grad and holds the result or its
    children qualifies, whatever its name; a method of the class must have a name
    with "backward" or "grad_fn" in it (not backward itself) and take no argument."""
    related = [node, *kids]
    for name, value in _own_attributes(node):
        if name not in _NODE_FIELDS and _is_rule(value, related):
            return name, True
    cls = type(node)
    for name in dir(cls):
        if name in _NODE_FIELDS or not any(word in name for word in _RULE_WORDS):
            continue
        method = inspect.getattr_static(cls, name, None)
        if (isinstance(method, types.FunctionType) and method.__code__.co_argcount == 1
                and "grad" in _code_names(method.__code__)):
            return name, False
    return None


def digests(roots: list[Any], children: dict[Any, list[Any]], data: Mapping[Any, float],
             names: Mapping[Any, str], *, all_data: bool = False) -> dict[Any, str]:
    """A digest of what each node is (op tag, name, its children's digests, and the data
    of a leaf without a name): the same on every run, whatever the order of a set or
    the ids, and on every pass of a training loop, whose updates change the data of
    parameters (named) and results (made from their children). ``all_data``: every
    node's data too, to tell apart what is otherwise the same."""
    digest: dict[Any, str] = {}
    for node in postorder(roots, children, key=None):
        kids = children[node]
        shown = data[node] if all_data or not (kids or node in names) else None
        text = repr((tag_of(node), shown, names.get(node), sorted(digest[kid] for kid in kids)))
        digest[node] = hashlib.sha1(text.encode()).hexdigest()
    return digest


def start_run(root: Any, children: dict[Any, list[Any]], order_key: Any) -> tuple[Run, list]:
    """Begin watching a backward() from ``root``: the data and gradients now, every
    chain rule wrapped (its calls recorded) and every children set iterating in the
    order of ``order_key`` (None: as it is). Returns the run and what ``finish_run``
    puts back."""
    used = {node: number(node, "data") for node in children}
    run = Run(root, children, used, {node: number(node, "grad") for node in children})
    restore: list[tuple[Any, str, Any, bool]] = []  # (object, attribute, kept, had it)
    try:
        if order_key is not None:
            _order_sets(children, order_key, restore)
        run.events, run.unwatched = _wrap_rules(children, restore)
    except BaseException:
        _restore(restore)
        raise
    return run, restore


def finish_run(run: Run, restore: list) -> None:
    """End a watched run: the engine put back as it was, the gradients it left noted."""
    _restore(restore)
    run.after = {node: number(node, "grad") for node in run.children}


def _restore(restore: list) -> None:
    for obj, attribute, kept, had in reversed(restore):
        if had:
            setattr(obj, attribute, kept)
        else:
            delattr(obj, attribute)  # the class's own shows through again
    restore.clear()


def _order_sets(children: dict[Any, list[Any]], key: Any, restore: list) -> None:
    """Swap every children set for one iterating in the order of ``key``."""
    for node, kids in children.items():
        attribute = children_attr(node)
        kept = getattr(node, attribute)
        if not isinstance(kept, (set, frozenset)):
            continue
        try:
            setattr(node, attribute, _InOrder(sorted(kids, key=key)))
        except (AttributeError, TypeError):
            continue  # a read-only attribute: its set iterates as it will
        restore.append((node, attribute, kept, True))


def _wrap_rules(children: dict[Any, list[Any]],
                restore: list) -> tuple[list[Event] | None, str | None]:
    """Wrap every node's chain rule so that its calls are recorded; the events list,
    or None and why no rule could be watched."""
    events: list[Event] = []
    found: dict[type, tuple[str, bool] | None] = {}
    for node, kids in children.items():
        if kids and type(node) not in found:
            found[type(node)] = rule_attribute(node, kids)
    missing = [cls.__name__ for cls, where in found.items() if where is None]
    if missing:
        return None, (f"{missing[0]}'s results keep no chain rule that backpropviz can "
                      "watch (a function stored on each result that adds to its children's "
                      ".grad, like micrograd's out._backward), so what each edge sent back is "
                      "not known; to draw it, store each op's rule on its result, e.g. "
                      "out._backward = _backward")
    kids_of = {id(node): list(dict.fromkeys(kids)) for node, kids in children.items()}

    def record(node: Any, call: Any) -> Any:
        kids = kids_of.get(id(node))
        if kids is None:  # a node of another graph
            return call()
        upstream = number(node, "grad")
        before = [number(kid, "grad") for kid in kids]
        result = call()
        events.append(Event(node, upstream, [
            (kid, was, number(kid, "grad")) for kid, was in zip(kids, before, strict=True)]))
        return result

    for cls, (attribute, on_instance) in found.items():
        if on_instance:
            continue
        original = inspect.getattr_static(cls, attribute)

        def method(self: Any, original: Any = original) -> Any:
            return record(self, lambda: original(self))
        restore.append((cls, attribute, original, attribute in cls.__dict__))
        setattr(cls, attribute, method)
    for node in children:
        attribute, on_instance = found.get(type(node)) or (None, False)
        rule = getattr(node, attribute, None) if on_instance else None
        if not callable(rule):
            continue

        def watched(node: Any = node, rule: Any = rule) -> Any:
            return record(node, rule)
        try:
            setattr(node, attribute, watched)
        except (AttributeError, TypeError):  # a frozen node
            return None, (f"the chain rule of a {type(node).__name__} (its .{attribute}) "
                          "cannot be watched: it is read-only")
        restore.append((node, attribute, rule, True))
    return events, None


class _Observed:
    """What the watch of a running script saw (watch.py tells it): the last backward()
    of another engine, watched as it ran, and the nodes made inside an operator method
    (the numbers micrograd wraps in a Value: ``y - 1.0``)."""

    def __init__(self) -> None:
        self.run: Run | None = None
        self._restore: list | None = None  # what the running backward() must put back
        self._made: dict[int, Any] = {}  # id -> a weak reference (or the node itself)

    def forget(self) -> None:
        """A new script (or cell) runs: nothing seen yet."""
        self.run, self._restore, self._made = None, None, {}

    def backward_called(self, root: Any) -> None:
        """The script calls ``root.backward()``: watch it (any failure: not watched)."""
        try:
            if not _within(root, WATCHED_NODES):
                self.run = None  # far too big to draw: not slowed down for nothing
                return
            _, children = collect([root])
            digest = digests([root], children, {n: number(n, "data") for n in children}, {})
            run, self._restore = start_run(root, children, digest.__getitem__)
        except Exception:  # the reading of the graph reports it, after the script
            self.run = None
            return
        if self.run is not None and self.run.root is root:
            run.passes = self.run.passes + 1
        self.run = run
        self._made = {key: ref for key, ref in self._made.items()
                      if _alive(ref) in children}  # of earlier graphs: let go

    def backward_returned(self) -> None:
        """The watched backward() returned (or raised): put the engine back as it was."""
        if self.run is not None and self._restore is not None:
            finish_run(self.run, self._restore)
        self._restore = None

    def init_called(self, frame: types.FrameType) -> None:
        """An ``__init__`` starts: its object is noted if an operator method of its class
        made it (directly, or through a helper such as ``_wrap``)."""
        caller = frame.f_back
        for _ in range(3):
            if caller is None:
                return
            if caller.f_code.co_name in OPERATOR_METHODS:
                break
            caller = caller.f_back
        else:
            return
        obj, owner = frame.f_locals.get("self"), caller.f_locals.get("self")
        if obj is not None and owner is not None and (
                isinstance(obj, type(owner)) or isinstance(owner, type(obj))):
            self.made(obj)

    def made(self, obj: Any) -> None:
        """``obj`` is being made inside an operator method of its own class."""
        try:
            self._made[id(obj)] = weakref.ref(obj)
        except TypeError:  # no weak references (__slots__): kept until the next backward
            self._made[id(obj)] = obj

    def made_by_op(self, node: Any) -> bool:
        return _alive(self._made.get(id(node))) is node

    def last_run(self) -> Run | None:
        """The script's last backward() of another engine, watched, if it has ended."""
        run = self.run
        return run if run is not None and run.after is not None else None


# A graph with more nodes than this is not watched as the script runs it (the drawing
# refuses 4000 nodes unless told otherwise); its backward() runs at full speed.
WATCHED_NODES = 100_000


def _within(root: Any, limit: int) -> bool:
    """Whether the graph below ``root`` has at most ``limit`` nodes (counted up to it)."""
    seen = {id(root)}
    stack = [root]
    while stack:
        node = stack.pop()
        attribute = children_attr(node)
        for kid in getattr(node, attribute) if attribute else ():
            if id(kid) not in seen:
                if len(seen) == limit:
                    return False
                seen.add(id(kid))
                stack.append(kid)
    return True


def _alive(ref: Any) -> Any:
    return ref() if isinstance(ref, weakref.ref) else ref


OBSERVED = _Observed()
# The operator methods inside which a node made is a wrapped number (micrograd's
# ``other if isinstance(other, Value) else Value(other)``), a helper's too.
OPERATOR_METHODS = frozenset((
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__",
    "__mul__", "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__",
    "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
    "__ipow__", "__matmul__", "__rmatmul__", "__neg__", "__pos__"))
