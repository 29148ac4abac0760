"""What every producer shares: the protocol it stands behind, and the one IR builder."""

from __future__ import annotations

import contextlib
import math
import types
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import networkx as nx

from . import ops
from .errors import DrawError

__all__ = ["Builder", "Live", "Producer", "attribute_names", "leaf_readers",
           "listed_parameters"]

# While a training run is recorded (``leaf_readers()``), each IR built keeps, by value
# id, each leaf's own object and how to read its numbers as they are now: what the
# script made of a parameter once the pass was over (the IR itself holds only numbers).
Live = tuple[Any, Callable[[Any], Any]]
_READERS: list[dict[str, Live]] = []


@contextlib.contextmanager
def leaf_readers() -> Iterator[dict[str, Live]]:
    """Within the block, the IR built last fills the dict yielded: value id -> (the
    producer's leaf, a function of it giving its numbers now as the IR stores them)."""
    readers: dict[str, Live] = {}
    _READERS.append(readers)
    try:
        yield readers
    finally:
        _READERS.remove(readers)


# How far attribute_names looks into a script's objects: steps below a global name
# (micrograd's model.layers[0].neurons[1].w[0] is six), and objects looked into in all.
_ATTRIBUTE_DEPTH = 6
_ATTRIBUTE_OBJECTS = 5000
_NOT_LOOKED_INTO = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
                    types.MethodType, str, bytes, int, float, complex, bool)


def attribute_names(names: Mapping[str, Any], is_node: Callable[[Any], bool]) -> dict[int, str]:
    """Each node kept in an attribute or a list of a script's object, by id, with the path
    the script would write to reach it: ``n.w[0]``, ``n.b``, ``model.layers[1].w[2]``
    (a hand-written neuron's weights have no global name of their own). Shorter paths
    first; names starting with ``_`` and modules, classes and functions are not looked into.
    """
    found: dict[int, str] = {}
    seen: set[int] = set()
    level = [(name, obj) for name, obj in names.items()
             if not name.startswith("_") and not is_node(obj)]
    for _ in range(_ATTRIBUTE_DEPTH):
        below = []
        for path, obj in level:
            if id(obj) in seen or isinstance(obj, _NOT_LOOKED_INTO) or len(seen) > \
                    _ATTRIBUTE_OBJECTS:
                continue
            seen.add(id(obj))
            if isinstance(obj, (list, tuple)):
                inner = [(f"{path}[{i}]", item) for i, item in enumerate(obj[:1000])]
            else:
                attrs = getattr(obj, "__dict__", None)
                inner = [] if not isinstance(attrs, dict) else [
                    (f"{path}.{key}", item) for key, item in attrs.items()
                    if isinstance(key, str) and not key.startswith("_")]
            for inner_path, item in inner:
                if is_node(item):
                    found.setdefault(id(item), inner_path)
                else:
                    below.append((inner_path, item))
        level = below
    return found


def listed_parameters(names: Mapping[str, Any]) -> dict[int, tuple[Any, str]]:
    """What each model among a script's names lists as its ``parameters()`` (micrograd's
    nn, a torch module, a lecture's class), by id: the object and its place there,
    ``model.parameters()[3]`` (the first model's). Classes, and objects whose
    ``parameters`` fails, are not models."""
    found: dict[int, tuple[Any, str]] = {}
    for name, obj in names.items():
        method = getattr(obj, "parameters", None)
        if name.startswith("_") or isinstance(obj, type) or not callable(method):
            continue
        try:
            listed = list(method())
        except Exception:  # not a model after all
            continue
        for place, parameter in enumerate(listed):
            found.setdefault(id(parameter), (parameter, f"{name}.parameters()[{place}]"))
    return found


class Producer(ABC):
    """One framework's way from a script's objects to the IR, registered in
    ``producers.PRODUCERS``: which objects are its values, what a run must record,
    how backward runs, and how its graph becomes the IR (with the ``Builder``).
    Its framework's names (op tags, node classes) stay in its own module."""

    name = ""  # the framework, for messages
    package: str | None = None  # the package a script imports to use it ("torch")
    fewer = ""  # how to draw fewer nodes, for the size limit's advice
    reads_backward = False  # backward runs when the graph is read (watched), not before

    def record(self) -> AbstractContextManager | None:
        """What a script that imports ``package`` runs inside, yielding its recording;
        None if the framework keeps its graph itself."""
        return None

    @abstractmethod
    def claims(self, obj: Any, recording: Any) -> bool:
        """Whether ``obj`` is one of the framework's values (``recording``: the run's)."""

    def near_miss(self, obj: Any) -> str | None:
        """For an object that almost is one of its values, what it lacks."""
        return None

    @abstractmethod
    def walk(self, nodes: Mapping[str, Any]) -> tuple[dict[str, Any], Callable[[Any], list]]:
        """For finding outputs: where each computed value's graph starts (by name; leaves
        left out), and the inputs of a node of that graph."""

    def size(self, roots: Iterable[Any]) -> int | None:
        """The IR's node count, if known before it is built (to refuse a huge graph first)."""
        return None

    def has_gradient(self, root: Any, recording: Any) -> bool:
        """Whether a backward pass has reached ``root``."""
        return False

    @abstractmethod
    def build(self, roots: Sequence[Any], names: Mapping[str, Any] | None, recording: Any,
              backward: bool) -> nx.MultiDiGraph:
        """The IR of everything ``roots`` depend on, named by ``names`` (a namespace)."""


class Builder:
    """Builds an IR graph from a producer's own objects, named by their keys.

    A producer calls ``add_value`` for each leaf and ``add_op`` then
    ``add_value(..., made_by=op)`` for each op and its result, operands before
    results, in the order the computation made them; ids follow that order
    (``v0, v1, …`` and ``op0, op1, …``), so the same script gives the same
    graph on every run. ``finish`` adds the graph attributes and what follows
    from the ops: which values are kept for backward and their bytes.
    """

    def __init__(self) -> None:
        self.graph = nx.MultiDiGraph()
        self.value_ids: dict[Hashable, str] = {}  # a producer's key -> the IR's id
        self.op_ids: dict[Hashable, str] = {}
        self._operands: dict[Hashable, list] = {}
        self._results: dict[Hashable, Hashable] = {}
        self._saves: dict[Hashable, Sequence | None] = {}
        self._nbytes: dict[Hashable, int] = {}
        self._inner_bytes = 0  # what ops keep that is no drawn value (their inner_bytes)
        if _READERS:  # a new IR: the readers are its own
            _READERS[-1].clear()

    def add_value(self, key: Hashable, *, data: Any, shape: tuple[int, ...], role: str,
                  label: str | None = None, grad: Any = None, made_by: Hashable = None,
                  nbytes: int | None = None, live: Live | None = None,
                  **attrs: Any) -> str:
        """A value node: its numbers as the IR stores them (a float, nested lists), its
        role; ``made_by`` the op (key) it is the result of; ``nbytes`` what keeping it
        for backward costs (default 8 bytes a number); ``live`` (a leaf's) is its object
        and how to read its numbers later, for ``leaf_readers``. Returns its id."""
        if 0 in shape:  # (its numbers, nested lists, would not even hold its shape)
            raise DrawError(f"{label or 'a tensor'} has no entries (shape {shape}): there "
                            "is nothing to draw; give it one entry or more")
        vid = self.value_ids[key] = f"v{len(self.value_ids)}"
        if live is not None and _READERS:
            _READERS[-1][vid] = live
        self.graph.add_node(vid, kind="value", label=label, data=data, grad=grad, shape=shape,
                            role=role, stored=False, nbytes=0, **attrs)
        self._nbytes[key] = 8 * math.prod(shape) if nbytes is None else nbytes
        if made_by is not None:
            self._results[made_by] = key
            self.graph.add_edge(self.op_ids[made_by], vid, key=0)
        return vid

    def add_op(self, key: Hashable, op: str, operands: Sequence[Hashable], *,
               exponent: float | None = None, sent: Sequence[Any] | None = None,
               running: Sequence[Any] | None = None, saves: Iterable[Hashable] | None = None,
               **attrs: Any) -> str:
        """An op node (canonical name ``op``) on the values ``operands`` (keys, in argument
        order, one twice for ``a * a``). ``sent`` is what backward sent along each operand
        edge (None: no backward yet), ``running`` each operand's gradient right after its
        share arrived; ``saves`` the values its backward rule reads (default: the
        registry's, ``out`` being its result). Returns its id."""
        oid = self.op_ids[key] = f"op{len(self.op_ids)}"
        symbol = ops.symbol(op, exponent, attrs.get("axis"))  # a reduction's axis: Σ₀
        node: dict[str, Any] = {"kind": "op", "op": op, "symbol": symbol}
        if exponent is not None:
            node["exponent"] = exponent
        self.graph.add_node(oid, **node, **attrs)
        for arg, operand in enumerate(operands):
            edge = {"arg": arg, "grad": None if sent is None else sent[arg]}
            if running is not None:
                edge["running"] = running[arg]
            self.graph.add_edge(self.value_ids[operand], oid, key=arg, **edge)
        self._inner_bytes += attrs.get("inner_bytes", 0)
        self._operands[key] = list(operands)
        self._saves[key] = None if saves is None else list(saves)
        return oid

    def finish(self, roots: Sequence[Hashable], *, backward_order: Iterable[Hashable] = (),
               seeds: Mapping[Hashable, Any] | None = None, notes: Sequence[str] = (),
               **graph_attrs: Any) -> nx.MultiDiGraph:
        """The graph: ``roots`` (value keys), the ops in ``backward_order`` (op keys), the
        ``seeds`` (value key -> the gradient backward started with there), other graph
        attributes, the bytes kept for backward and the ``notes`` (if any)."""
        G = self.graph
        nodes = G._node  # networkx's own dict of node attributes (its views cost more)
        value_ids = self.value_ids
        registry: dict[tuple[str, int], tuple] = {}  # (op, arity) -> what its rule reads
        kept: set[Hashable] = set()
        for key, oid in self.op_ids.items():
            saves = self._saves[key]
            if saves is None:
                operands = self._operands[key]
                where_saved = registry.get((nodes[oid]["op"], len(operands)))
                if where_saved is None:
                    where_saved = registry[nodes[oid]["op"], len(operands)] = \
                        ops.get(nodes[oid]["op"]).saved(len(operands))
                saves = [self._results[key] if where == "out" else operands[where]
                         for where in where_saved]
            nodes[oid]["saves"] = list(dict.fromkeys(value_ids[value] for value in saves))
            kept.update(saves)
        for key in kept:
            nodes[value_ids[key]].update(stored=True, nbytes=self._nbytes[key])
        G.graph["roots"] = [self.value_ids[root] for root in dict.fromkeys(roots)]
        G.graph["backward_order"] = [self.op_ids[op] for op in backward_order]
        G.graph["seeds"] = {self.value_ids[value]: seed for value, seed in (seeds or {}).items()}
        G.graph.update(graph_attrs)
        G.graph["stored_bytes"] = sum(self._nbytes[key] for key in kept) + self._inner_bytes
        if notes:
            G.graph["notes"] = list(notes)
        return G
