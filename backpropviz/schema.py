"""The IR's schema: every node, edge and graph attribute declared once, and validate() from it."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import operator
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from .errors import BackpropvizError, DrawError

__all__ = ["ATTRIBUTES", "EDGE", "GRAPH", "OP", "PLACES", "RESULT", "ROLES", "VALUE",
           "Attribute", "IRError", "Kind", "attribute", "contract_rst", "decode_graphml",
           "decode_json", "encode_graphml", "encode_json", "validate", "validated",
           "validated_once"]

ROLES = ("input", "param", "const", "intermediate", "output")

# Where an attribute sits: a value node, an op node, an operand edge (value -> op),
# the result edge (op -> value), or the graph itself.
VALUE, OP, EDGE, RESULT, GRAPH = "value", "op", "edge", "result edge", "graph"
PLACES = (VALUE, OP, EDGE, RESULT, GRAPH)


class IRError(BackpropvizError, ValueError):
    """A graph that breaks the IR contract; the message names the node or edge."""


# ---------------------------------------------------------------- kinds of values


def _is_real(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


_FLOATS = (np.float32, np.float64)  # the arrays' numbers: a tensor's float32 kept as it is


def _nested(x: Any, leaf: Callable[[Any], bool]) -> bool:
    """Whether ``x`` is a ``leaf`` or (nested, rectangular) lists of leaves, or an array of
    them (a large tensor's numbers stay a numpy array: floats, or bools for a gate)."""
    if isinstance(x, np.ndarray):
        return x.ndim > 0 and (x.dtype == np.bool_ if leaf is _is_flag else x.dtype in _FLOATS)
    if not isinstance(x, list):
        return leaf(x)
    try:
        array = np.array(x, dtype=object)
    except ValueError:  # ragged
        return False
    if array.dtype != object or array.ndim == 0:
        return False
    if leaf is _is_real:  # (by type: a tensor's thousands of numbers are of one or two)
        return all(map(_is_real_type, set(map(type, array.ravel()))))
    return all(map(leaf, array.ravel()))


@functools.cache
def _is_real_type(kind: type) -> bool:
    """Whether every object of type ``kind`` is ``_is_real``."""
    return issubclass(kind, (int, float)) and not issubclass(kind, bool)


def _is_flag(x: Any) -> bool:
    return isinstance(x, bool)


def _list_of(leaf: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, list) and all(map(leaf, x))


@dataclass(frozen=True)
class Kind:
    """What an attribute holds and how files hold it.

    ``numbers``: it holds floats that may be NaN or infinite, which strict JSON
    writes by name ("NaN", "Infinity", "-Infinity"); ``graphml_json``: GraphML,
    which holds only scalars of one type per key, keeps it as JSON text;
    ``is_tuple``: a tuple in the IR, a list in JSON.
    """

    text: str  # for the docs and messages
    check: Callable[[Any], bool]
    numbers: bool = False
    graphml_json: bool = False
    is_tuple: bool = False
    nullable: bool = False  # None is allowed (GraphML leaves it out)

    def encoding(self) -> str:
        json_form = "list" if self.is_tuple else "names non-finite floats" if self.numbers \
            else "as is"
        return f"JSON: {json_form}; GraphML: {'JSON text' if self.graphml_json else 'as is'}"


TEXT = Kind("a string", lambda x: isinstance(x, str))
NAME = Kind("a string or None", lambda x: x is None or isinstance(x, str), nullable=True)
NUMBERS = Kind("a float, or nested lists of floats (a float32/64 numpy array if large)",
               lambda x: _nested(x, _is_real),
               numbers=True, graphml_json=True)
MAYBE_NUMBERS = Kind("a float, nested lists of floats (an array if large), or None",
                     lambda x: x is None or _nested(x, _is_real), numbers=True,
                     graphml_json=True, nullable=True)
SHAPE = Kind("a tuple of ints", lambda x: isinstance(x, tuple) and all(
    isinstance(n, int) for n in x), graphml_json=True, is_tuple=True)
ROLE = Kind(f"one of {', '.join(ROLES)}", lambda x: x in ROLES)
FLAG = Kind("a bool", lambda x: isinstance(x, bool))
COUNT = Kind("an int ≥ 0", _is_count)
REAL = Kind("a number", _is_real, numbers=True)
INDEX = Kind("an int", lambda x: isinstance(x, int) and not isinstance(x, bool))
AXES = Kind("an int, or a tuple of ints", lambda x: INDEX.check(x) or (
    isinstance(x, tuple) and all(map(INDEX.check, x))), graphml_json=True, is_tuple=True)
GATES = Kind("a bool, or nested lists of bools", lambda x: _nested(x, _is_flag),
             graphml_json=True)
IDS = Kind("a list of node ids", _list_of(lambda x: isinstance(x, (str, int))), graphml_json=True)
EACH_NUMBERS = Kind("a list: a float, nested lists of floats or None for each",
                    _list_of(MAYBE_NUMBERS.check), numbers=True, graphml_json=True)
TEXTS = Kind("a list of strings", _list_of(TEXT.check), graphml_json=True)
COUNTS = Kind("a list of ints ≥ 0", _list_of(_is_count), graphml_json=True)
SEEDS = Kind("a dict: value id -> a float or nested lists", lambda x: isinstance(x, dict) and all(
    map(NUMBERS.check, x.values())), numbers=True, graphml_json=True)
SHARES = Kind("a dict: value id -> a list of [repetition, a float or nested lists]",
               lambda x: isinstance(x, dict) and all(
                   isinstance(pairs, list) and all(
                       isinstance(pair, list) and len(pair) == 2 and _is_count(pair[0])
                       and NUMBERS.check(pair[1]) for pair in pairs) for pairs in x.values()),
               numbers=True, graphml_json=True)
REPETITIONS = Kind("a dict: value id -> a list of ints ≥ 0", lambda x: isinstance(x, dict) and all(
    map(_list_of(_is_count), x.values())), graphml_json=True)
ID = Kind("a node id", lambda x: isinstance(x, (str, int)) and not isinstance(x, bool))
CLASSES = Kind("a dict: string -> string", lambda x: isinstance(x, dict) and all(
    isinstance(k, str) and isinstance(v, str) for k, v in x.items()), graphml_json=True)


@dataclass(frozen=True)
class Attribute:
    """One IR attribute: its name, place, kind, meaning, who sets it, whether it is required
    and (``shaped``) whether its numbers have the value's shape (an edge's: its operand's)."""

    name: str
    place: str
    kind: Kind
    meaning: str
    set_by: str
    required: bool = False
    shaped: bool = False


_PRODUCERS = "every producer (the builder)"
_ENGINE = "the engine's producer (ir.to_networkx)"
_TORCH = "the PyTorch producer (torch_import)"
_FOREIGN = "the other engines' producer (foreign)"
_VIEWS = "the views (views.py)"
_CHECK = "check (check.py)"

ATTRIBUTES: tuple[Attribute, ...] = (
    # ------------------------------------------------------------ value nodes
    Attribute("kind", VALUE, TEXT, '"value"', _PRODUCERS, required=True),
    Attribute("label", VALUE, NAME, "the user's name for it (a label, else a script name)",
              _PRODUCERS, required=True),
    Attribute("data", VALUE, NUMBERS, "its number(s) as the forward pass used them",
              _PRODUCERS, required=True, shaped=True),
    Attribute("grad", VALUE, MAYBE_NUMBERS, "its gradient after backward (None before)",
              _PRODUCERS, required=True, shaped=True),
    Attribute("shape", VALUE, SHAPE, "the array's shape, () for a scalar", _PRODUCERS,
              required=True),
    Attribute("role", VALUE, ROLE, "input, param, const, intermediate or output (a root)",
              _PRODUCERS, required=True),
    Attribute("stored", VALUE, FLAG, "some op's backward rule reads it, so forward keeps it",
              _PRODUCERS),
    Attribute("nbytes", VALUE, COUNT, "the bytes kept for backward (0 if not stored)",
              _PRODUCERS),
    Attribute("held_before", VALUE, NUMBERS, "the gradient it held when the drawn backward "
              "pass began: what backward passes not drawn left in .grad, which the drawn "
              "pass's shares add to", f"{_TORCH}, {_FOREIGN}"),
    Attribute("passes", VALUE, COUNT, "how many backward passes its gradient sums (if > 1)",
              f"{_ENGINE}, {_TORCH}"),
    Attribute("group", VALUE, TEXTS, "the groups a leaf was made in, outermost first",
              _ENGINE),
    Attribute("group_calls", VALUE, COUNTS, "which entry into each of its groups made it",
              _ENGINE),
    Attribute("expected", VALUE, NUMBERS, "the reference's gradient, where the engine's "
              "differs", _CHECK, shaped=True),
    # ------------------------------------------------------------ op nodes
    Attribute("kind", OP, TEXT, '"op"', _PRODUCERS, required=True),
    Attribute("op", OP, TEXT, "the canonical op name (ops.py): add, mul, matmul, relu…",
              _PRODUCERS, required=True),
    Attribute("symbol", OP, TEXT, "what its circle shows: +, ×, @, ReLU…", _PRODUCERS,
              required=True),
    Attribute("exponent", OP, REAL, "a power's number exponent (a ** 2)", _PRODUCERS),
    Attribute("axis", OP, AXES, "the axis (or axes) a reduction ran along, as the script "
              "gave it (none: all entries; PyTorch's read off the shapes)", f"{_ENGINE}, {_TORCH}"),
    Attribute("index", OP, TEXT, "an indexing op's index as the script wrote it (2, target, "
              ":, 0; ops.index_text)", f"{_ENGINE}, {_TORCH}"),
    Attribute("keepdims", OP, FLAG, "a reduction kept its reduced axes, of length 1",
              f"{_ENGINE}, {_TORCH}"),
    Attribute("dead", OP, GATES, "where a gate blocks the gradient (a dead ReLU, a dropped "
              "unit), by entry of its operand", _PRODUCERS),
    Attribute("mask", OP, NUMBERS, "dropout's kept (1) and dropped (0) units",
              f"{_ENGINE}, {_TORCH}"),
    Attribute("p", OP, REAL, "dropout's probability of dropping", f"{_ENGINE}, {_TORCH}"),
    Attribute("group", OP, TEXTS, "the groups it ran in (or nn.Modules), outermost first",
              f"{_ENGINE}, {_TORCH}, {_VIEWS}"),
    Attribute("group_calls", OP, COUNTS, "which entry into each of its groups ran it",
              f"{_ENGINE}, {_TORCH}, {_VIEWS}"),
    Attribute("saves", OP, IDS, "the values its backward rule reads", _PRODUCERS),
    Attribute("inner_bytes", OP, COUNT, "bytes it keeps for backward that are no drawn value",
              f"{_TORCH}, {_VIEWS}"),
    Attribute("reconstructed", OP, FLAG, "its engine keeps one child for a + a; both edges "
              "are drawn", _FOREIGN),
    Attribute("members", OP, IDS, "a closed group's ops, as ids of the IR it was drawn from",
              _VIEWS),
    Attribute("parameters", OP, IDS, "the parameters a module's operator holds (drawn inside "
              "it), as ids of the IR it was drawn from", _VIEWS),
    Attribute("parameter_names", OP, TEXTS, "...their names inside the module", _VIEWS),
    Attribute("parameter_grads", OP, EACH_NUMBERS, "...and their gradients", _VIEWS),
    Attribute("error_start", OP, FLAG, "the op where a wrong gradient starts", _CHECK),
    Attribute("loop_data", VALUE, EACH_NUMBERS, "a rolled loop's block value: its data at "
              "each repetition, first to last", "rolling"),
    Attribute("loop_grad", VALUE, EACH_NUMBERS, "...and its gradient (None before backward)",
              "rolling"),
    Attribute("loop_names", VALUE, TEXTS, "...and its name at each repetition, where each has "
              "its own (x[0], x[1], ...)", "rolling"),
    # ------------------------------------------------------------ operand edges
    Attribute("arg", EDGE, INDEX, "the operand's position (a * a has edges 0 and 1)",
              _PRODUCERS, required=True),
    Attribute("grad", EDGE, MAYBE_NUMBERS, "what backward sent along it: local derivative "
              "× upstream gradient", _PRODUCERS, shaped=True),
    Attribute("running", EDGE, MAYBE_NUMBERS, "the operand's gradient right after this "
              "contribution arrived, as the engine held it", _PRODUCERS, shaped=True),
    # ------------------------------------------------------------ the graph
    Attribute("roots", GRAPH, IDS, "the values drawn from (the outputs)", _PRODUCERS,
              required=True),
    Attribute("backward_order", GRAPH, IDS, "the ops in the order backward processed them",
              _PRODUCERS, required=True),
    Attribute("seeds", GRAPH, SEEDS, "where each backward pass started, with what gradient",
              _PRODUCERS),
    Attribute("stored_bytes", GRAPH, COUNT, "all bytes kept for backward", _PRODUCERS),
    Attribute("notes", GRAPH, TEXTS, "what a legend says about how the graph was read "
              "(and check's verdict)", f"{_PRODUCERS}, {_VIEWS}, {_CHECK}"),
    Attribute("remarks", GRAPH, TEXTS, "how the graph was simplified for drawing, where "
              "the picture shows it by itself: said on stderr and in the text form, not "
              "drawn", f"{_PRODUCERS}, {_VIEWS}"),
    Attribute("unwatched", GRAPH, TEXT, "why the backward pass has gradients but no steps (an "
              "engine whose chain rules could not be watched)", _FOREIGN),
    Attribute("entered", GRAPH, FLAG, "backward started beyond the drawing (the seeds are "
              "the roots' gradients)", f"{_ENGINE}, {_TORCH}"),
    Attribute("backward_passes", GRAPH, COUNT, "how many backward() calls the seeds come "
              "from, where more than one: .grad adds up what each pass sent", _TORCH),
    Attribute("earlier_passes", GRAPH, COUNT, "the graph is that of the script's last "
              "backward() call, after this many on graphs of their own, not drawn (a loop's "
              "earlier passes)", "the script front end (script.py)"),
    Attribute("differentiated", GRAPH, TEXT, "what a drawing that backward entered from beyond "
              "differentiates, by name (the whole graph's J, seen from inside a group)",
              "page_groups"),
    Attribute("module_groups", GRAPH, TEXTS, "the groups that are nn.Module calls", _TORCH),
    Attribute("module_classes", GRAPH, CLASSES, "each module group's class name", _TORCH),
    Attribute("view", GRAPH, FLAG, "a view of the IR (drawn as it is)", _VIEWS),
    Attribute("loop_came_before", GRAPH, REPETITIONS, "a rolled loop: for each shared value with a "
              "sum before the drawn repetition's share, the repetitions that sum holds, in "
              "the order backward sent them (0: a use outside the loop)", "rolling"),
    Attribute("loop_count", GRAPH, COUNT, "a rolled loop: how many repetitions its one "
              "drawn block stands for", "rolling"),
    Attribute("loop_step", GRAPH, COUNT, "a rolled loop: whose numbers are drawn "
              "(0: the first repetition)", "rolling"),
    Attribute("loop_before", GRAPH, SEEDS, "a rolled loop: each shared value's gradient "
              "when the drawn repetition's backward began (the later repetitions' shares), "
              "as the engine held it", "rolling"),
    Attribute("loop_arrived", GRAPH, IDS, "a rolled loop: the shared values whose "
              "loop_before reached them while backward swept the drawn repetition (an order "
              "that mixes repetitions), so known at their drawn share's step, not before",
              "rolling"),
    Attribute("loop_after", GRAPH, SEEDS, "a rolled loop: each shared value made by an "
              "op before the loop, and its gradient once every repetition had sent its share "
              "(what that op's step reads)", "rolling"),
    Attribute("loop_rest", GRAPH, SEEDS, "a rolled loop: each shared value's gradient once "
              "the repetitions not drawn (and its uses outside the drawing) have sent their "
              "shares after the drawn one's, as the engine held it (.grad, at the end): what "
              "the closing step sets", "rolling"),
    Attribute("loop_rest_after", GRAPH, ID, "a rolled loop: the op after whose step the "
              "closing step comes (the drawn repetition's last)", f"rolling, {_VIEWS}"),
    Attribute("loop_shares", GRAPH, SHARES, "a rolled loop: the shares the closing step adds "
              "to each shared value, in the order backward sent them, each with its "
              "repetition (1 the first; 0 a use outside the loop)", "rolling"),
    Attribute("loop_mixed", GRAPH, FLAG, "a rolled loop: some shares the closing step "
              "adds came while backward swept the drawn repetition (an engine whose order "
              "mixes repetitions, as a children set's does), not after it", "rolling"),
    Attribute("loop_back", GRAPH, IDS, "a rolled loop's back edges, in pairs: the block's "
              "output, then the box it enters the next repetition as", "rolling"),
)

_DECLARED: dict[str, dict[str, Attribute]] = {place: {} for place in PLACES}
for _attribute in ATTRIBUTES:
    _DECLARED[_attribute.place][_attribute.name] = _attribute


_REQUIRED = {place: tuple(name for name, spec in declared.items() if spec.required)
             for place, declared in _DECLARED.items()}
# The attributes of each place that hold numbers: a float there, on a scalar, is right.
_NUMBERS = {place: frozenset(name for name, spec in declared.items() if spec.kind.numbers)
            for place, declared in _DECLARED.items()}


def attribute(place: str, name: str) -> Attribute:
    """The declaration of attribute ``name`` at ``place`` (KeyError if there is none)."""
    return _DECLARED[place][name]


# ---------------------------------------------------------------- validation


def validate(G: Any) -> None:
    """Raise IRError unless ``G`` follows the IR contract: its structure (values and ops,
    edges value -> op -> value, roots, backward order) and every attribute as declared."""
    if not isinstance(G, nx.MultiDiGraph):
        raise IRError(f"the IR is a networkx.MultiDiGraph, got {type(G).__name__}")
    # networkx's own dicts ({node: attrs}; {node: {neighbour: {key: edge attrs}}}), read
    # only: its views cost more than these checks on big graphs of scalars.
    nodes, pred, succ = G._node, G._pred, G._succ
    # Every kind a string, first (an array's == is no answer), in one pass of map's.
    if not set(map(type, map(_KIND_OF, nodes.values()))) <= {str}:
        node, kind = next((node, attrs.get("kind")) for node, attrs in nodes.items()
                          if type(attrs.get("kind")) is not str)
        raise IRError(f"node {node!r}: kind must be 'value' or 'op', got {kind!r:.60}")
    outputs = set()
    for node, attrs in nodes.items():
        kind = attrs.get("kind")
        if kind == "value":
            _validate_value(nodes, node, attrs, pred[node], succ[node])
            if attrs["role"] == "output":
                outputs.add(node)
        elif kind == "op":
            _validate_op(nodes, node, attrs, pred[node], succ[node])
        else:
            raise IRError(f"node {node!r}: kind must be 'value' or 'op', got {kind!r}")
    if not _is_acyclic(G):
        raise IRError(f"the graph has a cycle: {nx.find_cycle(G)}")
    roots = G.graph.get("roots")
    if not isinstance(roots, list) or not roots:
        raise IRError("graph attribute 'roots' must be a non-empty list of value ids")
    _check_ids("roots", roots)
    for root in roots:
        if _kind_of(nodes, root) != "value":
            raise IRError(f"root {root!r} is not a value node of the graph")
    if outputs != set(roots):
        raise IRError(f"the values with role 'output' ({sorted(outputs)}) must be the "
                      f"graph's roots ({roots})")
    order = G.graph.get("backward_order")
    if not isinstance(order, list):
        raise IRError("graph attribute 'backward_order' must be a list of op ids")
    _check_ids("backward_order", order)
    if len(set(order)) != len(order):
        raise IRError("graph attribute 'backward_order' lists an op twice")
    for op in order:
        if _kind_of(nodes, op) != "op":
            raise IRError(f"backward_order names {op!r}, which is not an op node")
    _check_attributes(("the graph",), GRAPH, G.graph, None)  # (no float passed as a scalar's)
    for value in G.graph.get("seeds") or {}:
        if _kind_of(nodes, value) != "value":
            raise IRError(f"graph attribute 'seeds' names {value!r}, which is not a value node")


# Whether the graph at hand was validated already, in this call (``validated_once``).
_CHECKED: ContextVar[bool] = ContextVar("checked", default=False)


def validated(G: Any) -> None:
    """``validate(G)`` for a writer: DrawError unless ``G`` follows the IR contract;
    nothing inside ``validated_once``, where the graph at hand was validated already."""
    if _CHECKED.get():
        return
    try:
        validate(G)
    except IRError as error:
        raise DrawError(f"cannot draw an invalid graph: {error}") from None


@contextlib.contextmanager
def validated_once(G: Any = None) -> Iterator[None]:
    """``validated(G)`` once (None: the graph was validated where it was built, as
    ``graph_of_script``'s are); within, the writers take it, and the views made of it,
    as valid. Enter it once the graph to draw is made: nothing else is drawn within."""
    if G is not None:
        validated(G)
    token = _CHECKED.set(True)
    try:
        yield
    finally:
        _CHECKED.reset(token)


_KIND_OF = operator.methodcaller("get", "kind")
_ID_TYPES = {str, int}


def _check_ids(name: str, ids: list) -> None:
    """Each of a graph attribute's ``ids`` a node id (a string or an int), as a node of
    the graph can be named: a list or a dict there would not even be looked up."""
    if set(map(type, ids)) <= _ID_TYPES:
        return
    for item in ids:
        if not ID.check(item):
            raise IRError(f"graph attribute {name!r} holds {item!r:.60}, which is not a "
                          "node id (a string or an int)")


def _kind_of(nodes: Mapping, node: Any) -> Any:
    """A node's kind, or None if it is no node (of networkx's own dict ``nodes``)."""
    attrs = nodes.get(node)
    return None if attrs is None else attrs.get("kind")


def _check_attributes(where: tuple, place: str, attrs: Mapping, shape: tuple | None,
                      checked: frozenset[str] = frozenset()) -> None:
    """Each attribute of ``attrs`` declared for ``place`` and of its kind; the required
    ones present. ``checked`` were checked already (with their shapes). ``where`` names
    the node or edge (_where_text's: its text is made only for an error)."""
    declared = _DECLARED[place]
    # (the common case, a scalar's number, needs no more)
    numbers = _NUMBERS[place] if shape == () else frozenset()
    for name, value in attrs.items():
        if name in checked or (type(value) is float and name in numbers):
            continue
        spec = declared.get(name)
        if spec is None:
            known = ", ".join(sorted(declared)) or "none"
            raise IRError(f"{_where_text(where)}: unknown attribute {name!r} (the attributes "
                          f"of a {place} are: {known}); declare it in schema.py")
        if not spec.kind.check(value):
            raise _kind_error(where, spec, value)
        if spec.shaped and shape is not None and value is not None:
            _check_number(_where_text(where), value, shape, name)
    required = _REQUIRED[place]
    if required and not checked.issuperset(required):
        for name in required:
            if name not in attrs and name not in checked:
                raise IRError(f"{_where_text(where)} has no {name!r} attribute")


def _common(where: tuple, attrs: Mapping, common: tuple[Attribute, ...]) -> int:
    """How many of the attributes ``common`` (set by every producer, none shaped)
    ``attrs`` has, each checked: looked up, not found among all of ``attrs``."""
    present = 0
    for spec in common:
        if spec.name in attrs:
            present += 1
            value = attrs[spec.name]
            if not spec.kind.check(value):
                raise _kind_error(where, spec, value)
    return present


def _kind_error(where: tuple, spec: Attribute, value: Any) -> IRError:
    return IRError(f"{_where_text(where)}: {spec.name} must be {spec.kind.text}, "
                   f"got {value!r:.60}")


def _where_text(where: tuple) -> str:
    """The text naming a node or an edge in a message: ``where`` is ``(text,)`` (the
    graph), ``(what, node)`` or ``(u, "->", v)`` (an edge)."""
    if len(where) == 1:
        return where[0]
    if len(where) == 2:
        return f"{where[0]} {where[1]!r}"
    return f"edge {where[0]!r} -> {where[2]!r}"


def _is_acyclic(G: nx.MultiDiGraph) -> bool:
    """Whether ``G`` has no cycle, by Kahn's algorithm on the adjacency dicts.

    Taking, again and again, the nodes whose sources are all taken reaches
    every node exactly when there is no cycle.
    """
    waiting = {node: len(sources) for node, sources in G._pred.items()}
    ready = [node for node, count in waiting.items() if count == 0]
    for node in ready:  # grows as nodes lose their last waiting source
        for target in G._succ[node]:
            waiting[target] -= 1
            if not waiting[target]:
                ready.append(target)
    return len(ready) == len(waiting)


def _shape_of(x: Any) -> tuple[int, ...]:
    if _is_real(x):
        return ()
    if isinstance(x, np.ndarray) and x.dtype in _FLOATS:
        return x.shape
    if not isinstance(x, list):
        raise TypeError
    # Each entry by its type: np.array(x) would read [1.0, True] as floats; ragged lists
    # are an array of lists here, and a list is no number.
    array = np.array(x, dtype=object)
    if array.ndim == 0 or not all(map(_is_real_type, set(map(type, array.ravel())))):
        raise TypeError
    return array.shape


def _check_number(where: str, x: Any, shape: tuple[int, ...], what: str) -> None:
    if type(x) is float and shape == ():  # the common case, a scalar Value
        return
    try:
        actual = _shape_of(x)
    except (TypeError, ValueError):
        raise IRError(f"{where}: {what} must be a float or nested lists of floats, "
                      f"got {type(x).__name__}") from None
    if actual != shape:
        raise IRError(f"{where}: {what} has shape {actual}, expected {shape}")


_VALUE_CHECKED = ("kind", "label", "data", "grad", "shape", "role")
# What _validate_value and _validate_op check themselves, of a value, an edge and an op:
# the required attributes, and (_common) the others every producer sets.
_VALUE_CHECKED_SET = frozenset(_VALUE_CHECKED)
_ARG = attribute(EDGE, "arg")
_OP_CHECKED = frozenset({"kind", "op", "symbol"})
_VALUE_COMMON = (attribute(VALUE, "stored"), attribute(VALUE, "nbytes"))
_OP_COMMON = (attribute(OP, "saves"),)
_VALUE_ALL = _VALUE_CHECKED_SET | {spec.name for spec in _VALUE_COMMON}
_OP_ALL = _OP_CHECKED | {spec.name for spec in _OP_COMMON}


def _validate_value(nodes: Mapping, node: Any, attrs: dict, sources: Mapping,
                    targets: Mapping) -> None:
    """A value node's attributes, its producer and its operand edges (``sources`` and
    ``targets``: its adjacency dicts)."""
    if not attrs.keys() >= _VALUE_CHECKED_SET:
        missing = next(key for key in _VALUE_CHECKED if key not in attrs)
        raise IRError(f"value node {node!r} has no {missing!r} attribute")
    where = ("value node", node)
    label = attrs["label"]
    if label is not None and not isinstance(label, str):
        raise IRError(f"{_where_text(where)}: label must be a string or None")
    shape = attrs["shape"]
    if not isinstance(shape, tuple) or (shape and not all(isinstance(n, int) for n in shape)):
        raise IRError(f"{_where_text(where)}: shape must be a tuple of ints, got {shape!r}")
    if shape or type(attrs["data"]) is not float:  # (a scalar Value's float is right)
        _check_number(_where_text(where), attrs["data"], shape, "data")
    grad = attrs["grad"]
    if grad is not None and (shape or type(grad) is not float):
        _check_number(_where_text(where), grad, shape, "grad")
    role = attrs["role"]
    if type(role) is not str or role not in ROLES:
        raise IRError(f"{_where_text(where)}: role must be one of {list(ROLES)}, "
                      f"got {role!r}")
    if len(attrs) > len(_VALUE_CHECKED) + _common(where, attrs, _VALUE_COMMON):
        _check_attributes(where, VALUE, attrs, shape, _VALUE_ALL)
    producers = sum(map(len, sources.values()))
    if producers > 1:
        raise IRError(f"{_where_text(where)} is the result of {producers} ops; "
                      "a value has at most one")
    # A leaf is an input, a parameter or a constant, unless it is the root
    # itself (an output nothing was computed for); what an op made is not.
    if role not in (_MADE if producers else _LEAF):
        raise IRError(f"{_where_text(where)}: role {role!r} does not match its "
                      f"{'producing op' if producers else 'lack of a producing op'}")
    # Its operand edges: most carry only their position and a scalar's numbers, which
    # need no more (_check_attributes skips them alike).
    numbers = _NUMBERS[EDGE] if shape == () else frozenset()
    for target, keyed in targets.items():
        if nodes[target].get("kind") != "op":
            raise IRError(f"edge {node!r} -> {target!r} joins two values; "
                          "edges run value -> op -> value")
        for data in keyed.values():
            for name, value in data.items():
                if name == "arg":
                    if type(value) is not int:  # (a bool, a float or a string is no position)
                        raise _kind_error((node, "->", target), _ARG, value)
                elif type(value) is not float or name not in numbers:
                    _check_attributes((node, "->", target), EDGE, data, shape)
                    break


_MADE = ("intermediate", "output")  # the roles of a value an op made, and of a leaf
_LEAF = ("input", "param", "const", "output")


def _validate_op(nodes: Mapping, node: Any, attrs: dict, sources: Mapping,
                 targets: Mapping) -> None:
    """An op node's attributes, its one result and its operand positions."""
    for key in ("op", "symbol"):
        if not isinstance(attrs.get(key), str):
            raise IRError(f"op node {node!r}: {key!r} must be a string")
    where = ("op node", node)
    if len(attrs) > len(_OP_CHECKED) + _common(where, attrs, _OP_COMMON):
        _check_attributes(where, OP, attrs, None, _OP_ALL)
    results = [(target, data) for target, keyed in targets.items() for data in keyed.values()]
    if len(results) != 1:
        raise IRError(f"{_where_text(where)} has {len(results)} results; "
                      "an op has exactly one")
    result, data = results[0]
    if nodes[result].get("kind") != "value":
        raise IRError(f"{_where_text(where)}: its result {result!r} is not a value node")
    if data or _REQUIRED[RESULT]:  # (a result edge has no attributes of its own)
        _check_attributes((node, "->", result), RESULT, data, None)
    args = [data.get("arg", -1) for keyed in sources.values() for data in keyed.values()]
    with contextlib.suppress(TypeError):  # (ints, where its edges were checked: not an op's)
        args.sort()
    if args != list(range(len(args))):
        raise IRError(f"{_where_text(where)}: operand edges must carry arg "
                      f"0..{len(args) - 1}, got {args}")
    for saved in attrs.get("saves", ()):
        if _kind_of(nodes, saved) != "value":
            raise IRError(f"{_where_text(where)}: saves names {saved!r}, "
                          "which is not a value node")


# ---------------------------------------------------------------- encodings

# Strict JSON has no NaN or infinities: in the IR's numbers they are written as
# these strings (JavaScript's names for them), which any JSON parser reads.
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _kinds(*places: str) -> dict[str, Kind]:
    """The kind of each attribute name at these places (a name means one kind there)."""
    found: dict[str, Kind] = {}
    for place in places:
        for name, spec in _DECLARED[place].items():
            if found.setdefault(name, spec.kind) is not spec.kind:
                raise AssertionError(f"attribute {name!r} has two kinds among {places}")
    return found


_NODE_KINDS = _kinds(VALUE, OP)
_EDGE_KINDS = _kinds(EDGE, RESULT)
_GRAPH_KINDS = _kinds(GRAPH)
_DOMAINS = {"node": _NODE_KINDS, "edge": _EDGE_KINDS, "graph": _GRAPH_KINDS}


def encode_json(domain: str, attrs: Mapping) -> dict:
    """A node's, edge's or graph's attributes (``domain``) ready for strict JSON."""
    kinds = _DOMAINS[domain]
    return {name: _finite_or_named(value) if name in kinds and kinds[name].numbers
            else value.tolist() if isinstance(value, np.ndarray)  # (a large tensor's mask)
            else value for name, value in attrs.items()}


def decode_json(domain: str, attrs: Mapping) -> dict:
    """The attributes back from ``encode_json``'s (parsed) form."""
    kinds = _DOMAINS[domain]
    decoded = {}
    for name, value in attrs.items():
        kind = kinds.get(name)
        if kind is not None and kind.numbers:
            value = _named_to_float(value)
        elif kind is not None and kind.is_tuple and isinstance(value, list):
            value = tuple(value)
        decoded[name] = value
    return decoded


def encode_graphml(domain: str, attrs: Mapping) -> dict:
    """Attributes as GraphML holds them: scalars as they are, the rest as JSON text
    (None left out where the attribute allows it, read back as None)."""
    kinds = _DOMAINS[domain]
    encoded = {}
    for name, value in attrs.items():
        kind = kinds.get(name)
        if kind is not None and kind.graphml_json:
            encoded[name] = json.dumps(value.tolist() if isinstance(value, np.ndarray)
                                       else value)
        elif value is not None:
            encoded[name] = value
    return encoded


def decode_graphml(domain: str, attrs: Mapping, place: str | None = None) -> dict:
    """The attributes back from GraphML (``place``: where they sit, to restore the
    required ones left out as None)."""
    kinds = _DOMAINS[domain]
    decoded = {}
    for name, value in attrs.items():
        kind = kinds.get(name)
        if kind is not None and kind.graphml_json:
            value = json.loads(value)
            if kind.is_tuple and isinstance(value, list):
                value = tuple(value)
        decoded[name] = value
    for name, spec in _DECLARED.get(place, {}).items():
        if spec.required and spec.kind.nullable and not spec.kind.graphml_json:
            decoded.setdefault(name, None)
    return decoded


def _finite_or_named(x: Any) -> Any:
    """Numbers as strict JSON can hold them: non-finite floats by name, at any depth."""
    if isinstance(x, float):
        if math.isfinite(x):
            return x
        return "NaN" if math.isnan(x) else "Infinity" if x > 0 else "-Infinity"
    if isinstance(x, list):
        try:  # (numbers at any depth, all finite, as most are: checked in C)
            if np.isfinite(np.asarray(x, dtype=float)).all() and not _holds_array(x):
                return x
        except (TypeError, ValueError, OverflowError):  # (not numbers, ragged, or huge)
            pass
        return [_finite_or_named(item) for item in x]
    if isinstance(x, dict):
        return {key: _finite_or_named(item) for key, item in x.items()}
    if isinstance(x, np.ndarray):  # a large tensor's numbers, as nested lists
        return x.tolist() if np.isfinite(x).all() else _finite_or_named(x.tolist())
    return x


def _holds_array(rows: list) -> bool:
    """Whether a numpy array lies in ``rows`` at any depth (it is written as lists)."""
    return any(isinstance(item, np.ndarray) or (isinstance(item, list) and _holds_array(item))
               for item in rows)


def _named_to_float(x: Any) -> Any:
    if isinstance(x, str):
        return NON_FINITE.get(x, x)
    if isinstance(x, list):
        return [_named_to_float(item) for item in x]
    if isinstance(x, dict):
        return {key: _named_to_float(item) for key, item in x.items()}
    return x


# ---------------------------------------------------------------- the docs

_TITLES = {VALUE: "Value nodes", OP: "Op nodes", EDGE: "Operand edges (value → op)",
           RESULT: "Result edges (op → value)", GRAPH: "Graph attributes"}


def contract_rst(title: str = "The IR contract") -> str:
    """The declaration as a reST section: one table per place, each attribute with its
    type, meaning, who sets it and its JSON/GraphML encoding."""
    lines = [title, "=" * len(title), "",
             "The IR is a ``networkx.MultiDiGraph``. Node ids are deterministic (``v0, v1, …`` "
             "for values, ``op0, op1, …`` for ops, in the order the computation made them); "
             "edges run in the direction of data flow. ``backpropviz.schema.validate(G)`` "
             "checks every attribute below and refuses any other.", ""]
    for place in PLACES:
        declared = _DECLARED[place].values()
        lines += [_TITLES[place], "-" * len(_TITLES[place]), ""]
        if not declared:
            lines += ["None: the edge's key (0) is all it has.", ""]
            continue
        lines += [".. list-table::", "   :header-rows: 1", "   :widths: 14 18 36 16 16", "",
                  "   * - Attribute", "     - Type", "     - Meaning", "     - Set by",
                  "     - Encoding"]
        for spec in declared:
            name = f"``{spec.name}``" + (" (required)" if spec.required else "")
            lines += [f"   * - {name}", f"     - {spec.kind.text}", f"     - {spec.meaning}",
                      f"     - {spec.set_by}", f"     - {spec.kind.encoding()}"]
        lines.append("")
    return "\n".join(lines)
