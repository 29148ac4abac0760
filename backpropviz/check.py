"""Grade a hand-written engine: rebuild its computation in the reference engine, compare gradients.

``check_script("student.py")`` runs the script, reads the graph its engine
built (micrograd-style objects, micrograd itself, or backpropviz's own
Values), computes the same thing op by op with backpropviz's engine, and
compares every value's gradient. Where they differ it finds where the error
starts: the first op, in the order the student's backward ran, whose rule
sent wrong gradients although the gradient it received was right, and names
the classic causes (``=`` instead of ``+=`` at a fork, a wrong local
derivative, a node processed before its consumers, no seed of 1).
"""

from __future__ import annotations

import ast
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from . import foreign, ops
from .engine import (
    EngineError,
    Node,
    Tensor,
    Value,
    apply,
    can_apply,
    local_gradients,
    topological_order,
)
from .errors import BackpropvizError
from .ir import operand_edges, result_of
from .names import value_names
from .script import ScriptError, find_roots, imports_torch, running

__all__ = ["CheckError", "Report", "Wrong", "check_graph", "check_script", "disagreements"]

# As gradcheck's: a gradient is right when it is within this of the reference.
REL_TOL, ABS_TOL = 1e-6, 1e-9


class CheckError(BackpropvizError):
    """A script that cannot be checked, and what to do about it."""


@dataclass(frozen=True)
class Wrong:
    """A value whose gradient differs from the reference's."""

    name: str
    got: float
    expected: float
    constant: bool = False  # a number the script wrote, wrapped in a node by an operator


@dataclass
class Report:
    """What ``check`` found: the values checked, the wrong ones, where and why.

    ``graph`` is the student's graph as the IR, with ``expected`` on each
    wrong value and ``error_start`` on the op where the error starts.
    """

    checked: int
    wrong: list[Wrong]
    start: str | None = None
    causes: list[str] = field(default_factory=list)
    forward: list[str] = field(default_factory=list)
    graph: nx.MultiDiGraph | None = None
    notes: list[str] = field(default_factory=list)  # how it was graded (values updated)

    @property
    def ok(self) -> bool:
        return not self.wrong and not self.forward

    def text(self) -> str:
        notes = [f"note: {note}" for note in self.notes]
        if self.ok:
            return "\n".join([f"all {self.checked} gradients match the reference", *notes])
        lines = []
        if self.wrong:
            lines.append(f"{len(self.wrong)} of {self.checked} gradients differ from the "
                         "reference:")
            # (the script's values first; then, on a line of their own, the numbers it
            # wrote that an operator wrapped, whose gradients nobody reads)
            named = [w for w in self.wrong if not w.constant] or self.wrong
            width = max(len(w.name) for w in named)
            lines += [f"  {w.name:<{width}}  got {_show(w.got)}, expected {_show(w.expected)}"
                      for w in named]
            wrapped = [w for w in self.wrong if w not in named]
            if wrapped:
                lines.append("  and the numbers the script wrote, wrapped by its operators: "
                             + ", ".join(f"{w.name} (got {_show(w.got)}, expected "
                                         f"{_show(w.expected)})" for w in wrapped))
        return "\n".join(lines + self.findings() + notes)

    def findings(self) -> list[str]:
        """What the report says beyond the wrong numbers: forward values that differ,
        where the error starts and its cause (the picture's legend carries them too)."""
        lines = [f"forward: {line}" for line in self.forward]
        if self.start:
            lines.append(f"where it starts: {self.start}")
        return lines + [f"cause: {cause}" for cause in self.causes]

    def _note_on_picture(self) -> None:
        """Put the verdict in the graph's notes, which every picture's legend draws."""
        if self.graph is None:
            return
        if self.ok:
            verdict = [f"check: all {self.checked} gradients match the reference"]
        else:
            verdict = [f"check: {len(self.wrong)} of {self.checked} gradients differ from "
                       "the reference" if self.wrong else "check: the forward values differ "
                       "from the reference", *self.findings()]
        self.graph.graph["notes"] = [*self.graph.graph.get("notes", []), *verdict]


def _show(x: float) -> str:
    """A number as the report writes it: six digits (a wrong rule may differ in the fifth),
    with the minus sign every view writes."""
    return f"{x:.6g}".replace("-", "−")


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def check_script(path: str | os.PathLike, roots: Sequence[str] = (),
                 argv: Sequence[str] = (), script_timeout: float | None = None) -> Report:
    """Run the script at ``path`` as ``render`` runs it (``script.running``: a script
    whose work is inside ``main()`` too, with ``argv`` as its arguments, stopped after
    ``script_timeout`` seconds) and check the gradients of the graph it left: the
    ``roots`` named, else what its last backward() ran from, else its output."""
    with running(path, argv, script_timeout=script_timeout) as run:
        namespace = run.names
        try:
            found = find_roots(namespace, roots, path, called=run.called)
        except ScriptError:
            if imports_torch(run.source):  # no engine of its own to grade: say why
                raise CheckError(f"{path} computes with PyTorch, whose gradients are the "
                                 "reference: check grades a hand-written engine (a "
                                 "micrograd-style Value class); draw it with backpropviz "
                                 f"render {path}") from None
            if not _calls(run.source, "backward") and ("Value" in run.source
                                                        or "_backward" in run.source):
                # (values of an engine's, made inside main(), never backward from)
                raise CheckError("the script never calls backward(), so there is nothing to "
                                 "check: call backward() on the loss it computes, e.g. "
                                 "L.backward()") from None
            raise
    if len(found) != 1:
        raise CheckError(f"check grades one output at a time; name it, e.g. "
                         f"backpropviz check {path} {min(found)}")
    (name, root), = found.items()
    used: dict = {}
    if isinstance(root, Node):
        graph = _own_graph(root, namespace)
        # backpropviz's engine keeps each leaf as the forward pass used it (Node._used),
        # so a script that updates after backward() is graded on the values it used.
        used = {node: node._used for node in graph.order if node._used is not None}
    else:
        graph = foreign.read_graph(root, names=namespace)
    why = graph.inconsistency or ("values changed after backward(), e.g. an update p.data -= "
                                  "lr * p.grad" if graph.updated else None)
    if why is not None:
        raise CheckError(f"the gradients the script leaves are not those of one backward() "
                         f"from {name}: {why}; check a script that ends with "
                         f"one {name}.backward() (before any update)")
    # An engine whose backward() gives gradients, but which the script never
    # called: nothing to grade. (One whose backward leaves them all 0 is graded.)
    if not graph.script_ran and any(grad != 0 for grad in (graph.grads or {}).values()):
        raise CheckError(f"the script never calls backward(), so there is nothing to check: "
                         f"add {name}.backward() at its end")
    if graph.grads is None:
        if isinstance(root, Node) or callable(getattr(root, "backward", None)):
            raise CheckError(f"the script never calls backward(), so there is nothing to "
                             f"check: add {name}.backward() at its end")
        raise CheckError("the engine has no backward() method, so there is nothing to check")
    report = check_graph(graph, used)
    if report.forward and not used and _assigns_data(run.source):
        # A forward value that its operands do not give, in a script that sets .data:
        # an update after backward(), most likely, not a wrong forward pass.
        raise CheckError(f"{report.forward[0]}, and the script assigns to .data: values "
                         f"changed after {name}.backward() (an update such as p.data -= lr * "
                         "p.grad) cannot be graded; check a script that ends with one "
                         f"{name}.backward() (before any update)")
    return report


def _calls(source: str, method: str) -> bool:
    """Whether the script calls a method of that name anywhere (``L.backward()``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return True  # not ours to judge: the run reports it
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == method for node in ast.walk(tree))


def _assigns_data(source: str) -> bool:
    """Whether the script assigns to some object's ``.data`` (``w.data -= lr * w.grad``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    targets = [target for node in ast.walk(tree)
               for target in (node.targets if isinstance(node, ast.Assign) else
                              [node.target] if isinstance(node, ast.AugAssign) else [])]
    return any(isinstance(target, ast.Attribute) and target.attr == "data"
               for target in targets)


def _own_graph(root: Node, namespace: dict) -> foreign.ForeignGraph:
    """backpropviz's own Values read as another engine's graph (they pass, of course)."""
    order = topological_order([root])
    names = {}
    for name, obj in namespace.items():
        if isinstance(obj, Node) and not name.startswith("_"):
            names.setdefault(obj, name)
    for node in order:
        if node.label:
            names[node] = node.label
    graph = foreign.ForeignGraph(
        [root], order, {n: list(n.operands) for n in order if n.op is not None},
        {n: (n.op, n.exponent) for n in order if n.op is not None}, names)
    graph.script_ran = root.has_grad
    graph.grads = {n: float(n.grad) if n.has_grad else 0.0 for n in order}
    if not graph.script_ran:
        graph.grads = None
    return graph


def check_graph(graph: foreign.ForeignGraph, used: Mapping[Any, float] | None = None) -> Report:
    """Compare a read graph's gradients with the reference engine's, and diagnose.

    The reference is rebuilt from the numbers the IR draws (a leaf as the forward
    pass used it, where the producer knows it), or from ``used``: leaves' data as
    the forward pass used it, where it changed since (an update after backward).
    """
    reference: dict[Any, Value] = {}
    forward: list[str] = []
    G = foreign.to_ir(graph)
    names = value_names(G)
    value_ids = graph.value_ids

    def name_of(node: Any) -> str:
        return names[value_ids[node]].text

    changed = []
    for node, data in (used or {}).items():
        attrs = G.nodes[value_ids[node]]
        if not _close(float(data), float(attrs["data"])):
            changed.append(f"{name_of(node)} changed after backward() "
                           f"({_show(data)} → {_show(attrs['data'])}); it is graded as "
                           "the forward pass used it")
            attrs["data"] = float(data)
    if changed:
        G.graph["notes"] = [*G.graph.get("notes", []), *changed]
    for node in graph.order:
        data = G.nodes[value_ids[node]]["data"]
        if node not in graph.operands:
            reference[node] = Value(data)
            continue
        op, exponent = graph.ops[node]
        if not can_apply(op):
            raise CheckError(f"the reference engine cannot rebuild op {op!r} (the one giving "
                             f"{name_of(node)}); it checks "
                             f"{', '.join(name for name in ops.names() if can_apply(name))}")
        try:
            reference[node] = apply(op, [reference[kid] for kid in graph.operands[node]],
                                    exponent)
        except EngineError as error:
            raise CheckError(f"cannot rebuild {name_of(node)}: {error}") from None
        if not _close(reference[node].data, data):
            forward.append(f"{name_of(node)} is {_show(data)}, but {op} of its operands "
                           f"gives {_show(reference[node].data)}")
            reference[node].data = data  # go on from the student's value
    root = reference[graph.roots[0]]
    root.backward()
    got = graph.grads or {}
    wrong_nodes = [node for node in graph.order if not _close(got[node], reference[node].grad)]
    report = Report(len(graph.order), [Wrong(name_of(node), got[node], reference[node].grad,
                                             node in graph.constants)
                                       for node in wrong_nodes], forward=forward, graph=G,
                    notes=changed)
    for node in wrong_nodes:
        G.nodes[value_ids[node]]["expected"] = reference[node].grad
    if wrong_nodes:
        _diagnose(graph, reference, report, name_of)
    report._note_on_picture()
    return report


def _diagnose(graph: foreign.ForeignGraph, reference: dict, report: Report,
              name_of: Any) -> None:
    """Where the error starts, and which classic mistake fits."""
    root = graph.roots[0]
    got = graph.grads or {}
    if got.get(root) != 1.0 and reference[root].grad == 1.0:
        report.causes.append(f"the output {name_of(root)} has gradient {_show(got[root])}: "
                             "backward() must start by setting it to 1 (the seed), "
                             "before the sweep")
    events = [e for e in graph.events or () if e.node in graph.operands]
    if not events:
        _first_wrong_op(graph, reference, report, name_of)
        return
    when = {}
    for step, event in enumerate(events):
        when.setdefault(event.node, step)
    consumers: dict[Any, list] = {}
    for node, kids in graph.operands.items():
        for kid in set(kids):
            consumers.setdefault(kid, []).append(node)
    for step, event in enumerate(events, start=1):
        late = [user for user in consumers.get(event.node, ())
                if when.get(user, -1) > when[event.node]]
        if late:
            report.start = (f"{_op_giving(graph, event.node, name_of)} ran at step {step}, "
                            f"before {_op_giving(graph, late[0], name_of)}, which uses "
                            f"{name_of(event.node)}")
            _mark(report, graph, event.node)
            report.causes.append(
                f"when {name_of(event.node)} sent its gradient on, it had not received all of "
                "it yet: backward must visit the nodes in reverse topological order (each "
                "after every node that uses it)")
            return
    for step, event in enumerate(events, start=1):
        node = event.node
        if not _close(event.upstream, reference[node].grad):
            continue  # what arrived was already wrong: the error started earlier
        expected = _expected_shares(graph, reference, node, event.upstream)
        for kid, before, after in event.children:
            share = sum(expected[kid])
            if _close(after - before, share):
                continue
            where = f"{_op_giving(graph, node, name_of)} (step {step} of the backward pass)"
            _mark(report, graph, node)
            # = instead of +=: what is left is one contribution, not the sum.
            if (before != 0 or len(expected[kid]) > 1) and any(
                    _close(after, one) for one in (share, *expected[kid])):
                report.start = (f"{where} replaced the gradient of {name_of(kid)}, "
                                f"{_show(before)}, by {_show(after)} instead of adding "
                                f"{_show(share)} to it")
                report.causes.append(
                    f"{name_of(kid)} is used more than once, so its gradient has several "
                    "shares: write += in every _backward (gradients accumulate at forks)")
            else:
                op, _ = graph.ops[node]
                report.start = (f"{where} sent {_show(after - before)} to {name_of(kid)}; "
                                f"it should send {_show(share)}")
                report.causes.append(f"the local derivative of {op} is wrong: "
                                     f"{ops.get(op).rule}")
            return


def _op_giving(graph: foreign.ForeignGraph, node: Any, name_of: Any) -> str:
    op, exponent = graph.ops[node]
    return f"the {ops.get(op).symbol_for(exponent)} giving {name_of(node)}"


def _mark(report: Report, graph: foreign.ForeignGraph, node: Any) -> None:
    """Mark the op that makes ``node`` as the one where the error starts."""
    G = report.graph
    (op_id,) = G.predecessors(graph.value_ids[node])
    G.nodes[op_id]["error_start"] = True


def _expected_shares(graph: foreign.ForeignGraph, reference: dict, node: Any,
                     upstream: float) -> dict[Any, list[float]]:
    """What the reference rule sends each distinct child of ``node`` for ``upstream``,
    one number per edge (``a * a``: two)."""
    shares = local_gradients(reference[node], upstream)
    expected: dict[Any, list[float]] = {}
    for kid, share in zip(graph.operands[node], shares, strict=True):
        expected.setdefault(kid, []).append(share)
    return expected


def _first_wrong_op(graph: foreign.ForeignGraph, reference: dict, report: Report,
                    name_of: Any) -> None:
    """Without a watched run: the first op, from the output back, whose result's
    gradient is right but some operand's is not."""
    got = graph.grads or {}
    for node in reversed(graph.order):
        kids = graph.operands.get(node)
        if not kids or not _close(got[node], reference[node].grad):
            continue
        bad = [kid for kid in kids if not _close(got[kid], reference[kid].grad)]
        if bad:
            report.start = (f"{_op_giving(graph, node, name_of)}: its gradient is right, "
                            f"that of {name_of(bad[0])} is not")
            _mark(report, graph, node)
            return


def disagreements(G: nx.MultiDiGraph, ir: nx.MultiDiGraph | None = None) -> list[str]:
    """Where a picture does not agree with itself: each drawn op whose forward the
    reference engine knows, whose drawn result is not the op of its drawn operands.

    A drawn group (views.py) is checked by running its ops, from the IR ``ir`` it
    was drawn from, on its drawn operands. An empty list is a picture whose every
    op adds up (to 1e-5 relative, as float32 numbers from PyTorch do in float64);
    an index and ops the engine does not have are passed over.
    """
    found = []
    for op_id, attrs in G.nodes(data=True):
        if attrs["kind"] != "op":
            continue
        args = [u for u, _, _ in operand_edges(G, op_id)]  # a + a: a twice
        data = {u: G.nodes[u]["data"] for u in args}
        if attrs["op"] == ops.GROUP.name:
            if ir is None or not all(can_apply(ir.nodes[m]["op"]) for m in attrs["members"]):
                continue
            steps = [(ir.nodes[m], [u for u, _, _ in operand_edges(ir, m)], result_of(ir, m))
                     for m in attrs["members"]]
            known = {**data, **{u: ir.nodes[u]["data"] for _, args, _ in steps for u in args
                                if u not in data and not ir._pred[u]}}  # numbers inside
        elif can_apply(attrs["op"]):
            steps = [(attrs, args, result_of(G, op_id))]
            known = data
        else:
            continue
        try:
            for step_attrs, args, made in steps:
                known[made] = _applied(step_attrs, [known[u] for u in args])
        except (EngineError, TypeError, ValueError, KeyError):
            found.append(f"{op_id} ({attrs['op']}): the reference cannot apply it to its "
                         "drawn operands")
            continue
        result = known[steps[-1][2]]
        drawn = np.asarray(G.nodes[result_of(G, op_id)]["data"], dtype=np.float64)
        if drawn.shape != np.shape(result) or not np.allclose(
                drawn, result, rtol=1e-5, atol=1e-6, equal_nan=True):
            found.append(f"{op_id} ({attrs['op']}): drawn {drawn.tolist()}, but its drawn "
                         f"operands give {np.asarray(result).tolist()}")
    return found


def _applied(attrs: dict, data: list) -> Any:
    """The reference engine's result of the op ``attrs`` on numbers ``data``."""
    scalar = all(isinstance(x, float) for x in data)
    operands = [Value(x) if scalar else Tensor(x) for x in data]
    result = apply(attrs["op"], operands, attrs.get("exponent"), attrs.get("axis"),
                   attrs.get("keepdims", False)).data
    return float(result) if scalar else np.asarray(result).tolist()

