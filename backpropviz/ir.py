"""The IR: a networkx MultiDiGraph of value and op nodes, its checks and conversions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .builder import Builder, Producer, attribute_names
from .engine import Node, topological_order
from .formatting import changed_note
from .groups import numbered
from .json_text import json_text
from .schema import (
    ROLES,
    IRError,
    decode_graphml,
    decode_json,
    encode_graphml,
    encode_json,
    validate,
)

__all__ = [
    "ENGINE",
    "LIST_ENTRIES",
    "ROLES",
    "IRError",
    "fold_chains",
    "from_graphml",
    "from_node_link",
    "operand_edges",
    "plain_number",
    "result_of",
    "to_graphml",
    "to_json",
    "to_networkx",
    "to_node_link",
    "validate",
]

# An array of more entries than this stays a numpy array in the IR: nested lists of
# a ResNet's millions of numbers would take seconds to make and check, and gigabytes.
LIST_ENTRIES = 4096


def plain_number(x: Any) -> Any:
    """An engine number as the IR stores it: a float, nested lists of floats, or a float64
    array if it has more than ``LIST_ENTRIES`` entries."""
    if x is None:
        return None
    array = np.asarray(x, dtype=np.float64)
    if array.ndim == 0:
        return float(array)
    return array if array.size > LIST_ENTRIES else array.tolist()


def _role(node: Node, roots: set) -> str:
    if node in roots:
        return "output"
    if node.op is not None:
        return "intermediate"
    if node.requires_grad is None:
        return "const"
    return "param" if node.requires_grad else "input"


def to_networkx(*roots: Node, names: Mapping[str, Any] | None = None) -> nx.MultiDiGraph:
    """The IR of everything ``roots`` depend on, with the backward record if any.

    ``names`` maps names to nodes (a script's namespace will do: anything that
    is not a node is ignored); a node's name is its ``label`` if it was given
    one, else its first name there that does not start with an underscore.
    """
    if not roots:
        raise IRError("to_networkx needs at least one root Value or Tensor")
    for root in roots:
        if not isinstance(root, Node):
            raise TypeError(f"a root must be a Value or Tensor, got {type(root).__name__}")
    name_of: dict[int, str] = {}
    for name, obj in (names or {}).items():
        if isinstance(obj, Node) and not name.startswith("_"):
            name_of.setdefault(id(obj), name)
    for key, path in attribute_names(names or {}, lambda obj: isinstance(obj, Node)).items():
        name_of.setdefault(key, path)  # (a neuron's weights: n.w[0])

    order = topological_order(roots)
    calls = numbered(node._group for node in order)
    root_set = set(roots)
    build = Builder()
    notes: list[str] = []
    for node in order:
        if node.op is not None:
            attrs: dict[str, Any] = {}
            if getattr(node, "keepdims", False):
                attrs["keepdims"] = True
            axis = getattr(node, "axis", None)  # a reduction's
            if axis is not None:
                attrs["axis"] = axis
            if ops.get(node.op).indexed and getattr(node, "index", None) is not None:
                attrs["index"] = ops.index_text(node.index)  # x[2]: the 2
            dead = ops.dead_units(node.op, node.operands[0].data)
            if getattr(node, "keep", None) is not None:  # dropout: the mask it applied
                attrs.update(mask=node.keep.astype(float).tolist(), p=node.rate)
                dead = (~node.keep).tolist()
            if dead is not None:
                attrs["dead"] = dead
            if node._group:  # made inside with group(...): drawn as part of one operator
                attrs.update(_group_attrs(node._group, calls))
            sent = None if node._sent is None else [plain_number(x) for x in node._sent]
            running = None if node._sent is None else [plain_number(x) for x in node._sums]
            build.add_op(node, node.op, node.operands, exponent=node.exponent, sent=sent,
                         running=running, **attrs)
        label = node.label or name_of.get(id(node))
        data = node.data
        if node._used is not None:  # a leaf, as the forward pass used it
            if not np.array_equal(node._used, data, equal_nan=True):
                notes.append(changed_note(label, node._used, data))
            data = node._used
        attrs = {}
        if node._passes > 1:
            attrs["passes"] = node._passes  # its gradient sums that many passes
        if node.op is None and node._group:  # a leaf made inside a group belongs to it
            attrs.update(_group_attrs(node._group, calls))
        build.add_value(node, label=label, data=plain_number(data),
                        grad=plain_number(node.grad) if node.has_grad else None,
                        shape=tuple(np.shape(node.data)), role=_role(node, root_set),
                        made_by=node if node.op is not None else None,
                        live=(node, _data_now) if node.op is None else None, **attrs)

    # The order the passes processed the ops: pass by pass, each in reverse creation order.
    processed = sorted((node for node in build.op_ids if node._pass is not None),
                       key=lambda node: (node._pass, -node._index))
    seeds = {node: plain_number(node._seed) for node in order if node._seed is not None}
    entered = {}
    if not seeds and processed:
        # Backward ran from a later value: the drawn roots' gradients enter from there.
        seeds = {root: plain_number(root.grad) for root in roots if root.has_grad}
        entered["entered"] = True
        notes.append("the backward pass started at a later value, beyond the drawing; the "
                     "roots' gradients come from there")
    passes = max((node._passes for node in order), default=0)
    if passes > 1:
        notes.append(f"each gradient is .grad as the engine holds it: the sum over the "
                     f"{passes} backward passes that reached it (each adds its own, as in "
                     "PyTorch); the steps show the last pass")
    return build.finish(roots, backward_order=processed, seeds=seeds, notes=notes, **entered)


def _data_now(node: Node) -> Any:
    """A leaf's numbers now (an update may have changed or replaced its data)."""
    return plain_number(node.data)


class EngineProducer(Producer):
    """backpropviz's own Values and Tensors: the graph they record, as ``to_networkx`` reads it."""

    name = "backpropviz"
    package = "backpropviz"
    fewer = "use the Tensor form (one node per matrix, not per number), "

    def claims(self, obj: Any, recording: Any = None) -> bool:
        return isinstance(obj, Node)

    def walk(self, nodes: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
        return ({name: node for name, node in nodes.items() if node.op is not None},
                lambda node: list(node.operands))

    def size(self, roots: Any) -> int:
        order = topological_order(roots)
        return len(order) + sum(node.op is not None for node in order)

    def has_gradient(self, root: Any, recording: Any) -> bool:
        return root.has_grad

    def build(self, roots: Any, names: Mapping[str, Any] | None, recording: Any,
              backward: bool) -> nx.MultiDiGraph:
        return to_networkx(*roots, names=names)


ENGINE = EngineProducer()


# ---------------------------------------------------------------- folding


def _group_attrs(path: Any, calls: Mapping[int, int]) -> dict[str, list]:
    """A node's groups as the IR keeps them: their names, outermost first, and
    which entry into each it was made in (``group_calls``)."""
    return {"group": [member for member, _ in path],
            "group_calls": [calls[call] for _, call in path]}


def name_constants(G: nx.MultiDiGraph, numbers: Mapping[str, float]) -> nx.MultiDiGraph:
    """``G`` with its unnamed scalar constants named after the script's numbers.

    ``numbers`` maps a global name to the number bound to it (``y = 0``,
    ``lam = 0.1``); a constant takes the name whose number it equals, if
    exactly one does. The caller leaves out numbers that are also written as
    literals in the arithmetic (a ``2`` in ``/ 2`` is not ``n = 2``).
    """
    by_value: dict[float, list[str]] = {}
    for name, number in numbers.items():
        by_value.setdefault(float(number), []).append(name)
    for _, attrs in G.nodes(data=True):
        if (attrs.get("role") == "const" and not attrs.get("label")
                and isinstance(attrs.get("data"), float)):
            names = by_value.get(attrs["data"], [])
            if len(names) == 1:
                attrs["label"] = names[0]
    return G


def fold_chains(G: nx.MultiDiGraph, min_operands: int = 3) -> nx.MultiDiGraph:
    """The IR with every chain of a chaining op (``a + b + c``) drawn as one op.

    An addition whose result has no name, is no root and is used only by
    another addition is folded into it: Python's ``sum(...)`` of many terms,
    a neuron's weighted sum. The folded op takes all the chain's operands, in
    order, and each operand edge keeps what it carried (the gradient it sent,
    its running sum): an addition sends the same gradient to every operand, so
    nothing is recomputed. Chains of fewer than ``min_operands`` operands stay
    as they are. The input graph is not changed.
    """
    def chaining(op: Any) -> bool:
        attrs = G.nodes[op]
        return attrs.get("kind") == "op" and ops.get(attrs["op"]).chains

    roots = set(G.graph.get("roots", ()))
    inner: dict[Any, Any] = {}  # folded op -> the op it folds into
    for op in G:
        if not chaining(op):
            continue
        result = result_of(G, op)
        users = [(v, k) for v, keyed in G._succ[result].items() for k in keyed]
        if (G.nodes[result]["label"] is None and result not in roots and len(users) == 1
                and chaining(users[0][0]) and G.nodes[users[0][0]]["op"] == G.nodes[op]["op"]):
            inner[op] = users[0][0]
    if not inner:
        return G
    H = G.copy()
    folded = []
    for top in (op for op in G if chaining(op) and op not in inner):
        edges = _chain_operands(G, top, inner)
        if len(edges) < min_operands or len(edges) == len(operand_edges(G, top)):
            continue
        for u, v, k in operand_edges(G, top):
            H.remove_edge(u, v, k)
        for arg, (u, v, k) in enumerate(edges):
            H.add_edge(u, top, key=arg, **{**G.edges[u, v, k], "arg": arg})
        folded.append(top)
    gone = {op for op in inner if _top_of(op, inner) in folded}
    H.remove_nodes_from([*gone, *(result_of(G, op) for op in gone)])
    H.graph["backward_order"] = [op for op in G.graph["backward_order"] if op not in gone]
    H.graph["remarks"] = [*G.graph.get("remarks", ()),
                          "a chain of + whose inner sums have no name (Python's sum(), a "
                          "neuron's weighted sum) is drawn as one +, each edge as it was"]
    return H


def _chain_operands(G: nx.MultiDiGraph, top: Any, inner: dict) -> list[tuple]:
    """The operand edges of a chain ending at ``top``, inner sums replaced by theirs (in order)."""
    found: list[tuple] = []
    stack = list(reversed(operand_edges(G, top)))
    while stack:
        u, v, k = stack.pop()
        producer = next(iter(G._pred[u]), None)
        if producer is not None and inner.get(producer) == v:
            stack.extend(reversed(operand_edges(G, producer)))
        else:
            found.append((u, v, k))
    return found


def _top_of(op: Any, inner: dict) -> Any:
    while op in inner:
        op = inner[op]
    return op


# ---------------------------------------------------------------- reading


def result_of(G: nx.MultiDiGraph, op: Any) -> Any:
    """The value node an op produces."""
    return next(iter(G._succ[op]))  # (networkx's own dict, read only)


def operand_edges(G: nx.MultiDiGraph, op: Any) -> list[tuple[Any, Any, Any]]:
    """An op's operand edges ``(operand, op, key)``, in argument order."""
    pred = G._pred[op]  # (networkx's own dict, read only)
    edges = [(u, op, k) for u, keyed in pred.items() for k in keyed]
    if len(edges) == 2:  # (most ops: a comparison, not a sort)
        (first, _, i), (second, _, j) = edges
        if pred[first][i].get("arg") > pred[second][j].get("arg"):
            edges.reverse()
    elif len(edges) > 2:
        edges.sort(key=lambda edge: pred[edge[0]][edge[2]].get("arg"))
    return edges


# ---------------------------------------------------------------- formats


def to_node_link(G: nx.MultiDiGraph) -> dict:
    """The IR as node-link data (networkx's layout, ``edges="edges"``), ready for strict
    JSON: a NaN or an infinity in its numbers is the string "NaN", "Infinity" or
    "-Infinity" (``from_node_link`` reads them back as floats). Each attribute's encoding
    is the schema's."""
    data = nx.node_link_data(G, edges="edges")
    data["nodes"] = [encode_json("node", attrs) for attrs in data["nodes"]]
    data["edges"] = [encode_json("edge", attrs) for attrs in data["edges"]]
    data["graph"] = encode_json("graph", data["graph"])
    return data


def to_json(G: nx.MultiDiGraph) -> str:
    """The IR as strict JSON text: ``to_node_link``'s data (what ``-o graph.json`` writes)."""
    return json_text(to_node_link(G), depth=2)  # (a node or an edge a line)


def from_node_link(data: Mapping | str | bytes) -> nx.MultiDiGraph:
    """The IR back from ``to_node_link``'s data, or from its JSON text."""
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as error:
            raise IRError(f"not JSON: {error}") from None
    if not isinstance(data, Mapping):
        raise IRError(f"node-link data is a JSON object, got {type(data).__name__}")
    G = nx.node_link_graph(dict(data), directed=True, multigraph=True, edges="edges")
    for _, attrs in G.nodes(data=True):
        attrs.update(decode_json("node", attrs))
    for *_, attrs in G.edges(data=True):
        attrs.update(decode_json("edge", attrs))
    G.graph.update(decode_json("graph", G.graph))
    return G


def to_graphml(G: nx.MultiDiGraph) -> str:
    """The IR as GraphML text; arrays and lists are stored as JSON strings (the schema
    says which)."""
    H = nx.MultiDiGraph()
    H.graph.update(encode_graphml("graph", G.graph))
    for node, attrs in G.nodes(data=True):
        H.add_node(node, **encode_graphml("node", attrs))
    for u, v, k, attrs in G.edges(keys=True, data=True):
        H.add_edge(u, v, key=k, **encode_graphml("edge", attrs))
    return "\n".join(nx.generate_graphml(H, named_key_ids=True))


def from_graphml(text: str) -> nx.MultiDiGraph:
    """The IR back from ``to_graphml`` text."""
    H = nx.parse_graphml(text, force_multigraph=True)
    G = nx.MultiDiGraph()
    G.graph.update(decode_graphml("graph", {key: value for key, value in H.graph.items()
                                            if key not in ("node_default", "edge_default")}))
    for node, attrs in H.nodes(data=True):
        G.add_node(node, **decode_graphml("node", attrs, attrs.get("kind")))
    for u, v, k, attrs in H.edges(keys=True, data=True):
        G.add_edge(u, v, key=int(k) if str(k).isdigit() else k, **decode_graphml("edge", attrs))
    return G
