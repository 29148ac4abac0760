"""PyTorch recording: each torch op a script runs, its values then, the gradients backward sends."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import numbers
import operator
import re
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from . import groups, ops, torch_rnn
from .engine import backward_done_listeners, backward_listeners
from .errors import BackpropvizError

__all__ = ["CREATE_GRAPH", "INSTALL_HINT", "TORCH_FUNCTIONS", "TORCH_NODES", "Recording",
           "TorchImportError", "capture", "is_torch_tensor"]

INSTALL_HINT = "install it with: pip install 'backpropviz[torch]'"

# What a drawing that a gradient's own graph reaches is refused with.
CREATE_GRAPH = ("this script differentiates a gradient (torch.autograd.grad or backward with "
                "create_graph=True), and backpropviz cannot draw the graph autograd builds "
                "for a gradient, so its numbers would be wrong; draw the script without "
                "create_graph=True (its first-order gradients) instead")


class TorchImportError(BackpropvizError, ValueError):
    """A torch computation backpropviz cannot draw correctly, explained in one sentence."""


def is_torch_tensor(obj: Any) -> bool:
    """Whether ``obj`` is a torch.Tensor; never imports torch (a script that made one did)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise TorchImportError(f"this needs PyTorch, which is not installed; {INSTALL_HINT}") \
            from None
    return torch


# ---------------------------------------------------------------- op names

# Autograd's node names and torch's function names map to canonical ops in
# the registry (ops.py); anything else keeps the name of the function called.
_REFLECTED = re.compile(r"__r(add|sub|mul|truediv|div|floordiv|pow|matmul|mod)__")
_IN_PLACE_DUNDER = re.compile(r"__i(add|sub|mul|truediv|div|floordiv|pow|matmul|mod)__")


# PyTorch's names for the registry's ops (ops.py): autograd's node classes, without
# "Backward<n>", and the functions a script calls under another name than the op's.
TORCH_NODES = {"Add": "add", "Sub": "sub", "Rsub": "sub", "Mul": "mul", "Div": "div",
               "Pow": "pow", "Neg": "neg", "Mv": "matmul", "Mm": "matmul", "Bmm": "matmul",
               "Dot": "matmul", "Matmul": "matmul", "Relu": "relu", "Tanh": "tanh",
               "Exp": "exp", "Log": "log", "Sigmoid": "sigmoid", "Sqrt": "sqrt", "Sum": "sum",
               "Mean": "mean", "T": "transpose", "Transpose": "transpose",
               "Select": "getitem", "Index": "getitem", "Slice": "getitem"}
TORCH_FUNCTIONS = {"subtract": "sub", "multiply": "mul", "truediv": "div", "true_divide": "div",
                   "divide": "div", "square": "pow", "negative": "neg",
                   "feature_dropout": "dropout", "permute": "transpose",
                   "iter": "unbind",  # for row in W: the rows, by unbind
                   "T": "transpose", "mT": "transpose", "t": "transpose"}  # k.T, a property


def _function_name(func: Any) -> str:
    name = getattr(func, "__name__", None) or type(func).__name__
    if name == "__get__":  # a property such as Tensor.T
        name = getattr(getattr(func, "__self__", None), "__name__", name)
    return name


def _op_name(function: str, node_class: str | None) -> str:
    """The IR op for a call: the op the script called, if the registry knows it (dropout,
    not the multiplication it is made of), else its autograd node's, else its name."""
    match = _REFLECTED.fullmatch(function) or _IN_PLACE_DUNDER.fullmatch(function)
    name = match.group(1) if match else function.strip("_")
    if name.endswith("_"):  # in place: relu_ is relu applied to the tensor itself
        name = name[:-1]
    called = TORCH_FUNCTIONS.get(name, name)
    if called in ops.names():
        return called
    if node_class is not None:
        canonical = TORCH_NODES.get(re.sub(r"Backward\d*$", "", node_class))
        if canonical is not None:
            return canonical
    return called


# ---------------------------------------------------------------- recording


def _index_kept(index: Any) -> Any:
    """An index as a call keeps it: each tensor in it as ``("tensor", id, a copy)``."""
    if isinstance(index, (tuple, list)):
        return type(index)(_index_kept(part) for part in index)
    if is_torch_tensor(index):
        return ("tensor", id(index), index.detach().clone())
    return index


def _result_key(node: Any, number: int) -> tuple:
    """The key of result ``number`` of autograd node ``node`` (split's q, k, v: 0, 1, 2)."""
    return ("node", node, number)


@dataclass
class _Operand:
    """One operand of a recorded call: a tensor (by value key) or a number written in the script.

    ``link`` is where the operand's gradient arrives: the result of an autograd
    node (its key, ``("node", grad_fn, output_nr)``), or ``("leaf", id)`` for a
    leaf's AccumulateGrad; None when torch computes no gradient for it.
    """

    key: Any
    link: Any = None
    number: float | None = None
    aten_name: str | None = None  # "self" or "other" where autograd saves it by that name


@dataclass(eq=False)
class _Call:
    """A torch function call that produced a tensor with a new autograd node."""

    index: int
    op: str
    output: Any  # the autograd node of the result
    operands: list[_Operand]
    nodes: list[Any]  # every autograd node the call created, the output's first
    external: list[tuple[Any, int, Any]]  # (node, input index, link) edges leaving the call
    exponent: float | None = None
    group: tuple = ()  # the groups open when it ran: names, and nn.Modules being called
    mask: Any = None  # dropout's kept units (1) and dropped ones (0)
    # An indexing call's index as the script gave it (x[2], x[rows, target]), each tensor
    # in it as (its id, a copy): the IR writes it by the tensor's name or its numbers.
    picked: Any = None
    rate: float | None = None  # dropout's p
    saved: list[tuple[Any, int]] = field(default_factory=list)  # (storage key, nbytes)
    # "self"/"other" -> (storage key, nbytes), for a number autograd saves as a tensor
    saved_names: dict[str, tuple[Any, int]] = field(default_factory=dict)
    problem: str | None = None
    result: int = 0  # which result of its node it is (split's q, k, v: 0, 1, 2)
    results: int = 1  # how many results the node has that the script holds

    @property
    def key(self) -> tuple:
        """The value key of its result."""
        return _result_key(self.output, self.result)


@dataclass
class _Shares:
    """At an autograd node with several results (split), what backward sent to its
    operands for each result alone (``inputs[result][edge]``), and each result's gradient."""

    inputs: list[list[Any]]
    outputs: list[Any]
    problem: str | None = None


@dataclass
class _Leaf:
    tensor: Any
    value: Any
    requires_grad: bool
    order: tuple
    storage: Any


@dataclass
class _Output:
    value: Any
    version: int
    storage: Any


@dataclass
class _Gradients:
    """What the hooks saw at one autograd node, summed over backward passes, and what
    each pass brought to its output and sent on (pass number -> gradient, gradients)."""

    call: _Call
    inputs: list[Any]
    output: Any
    step: int
    passes: dict[int, Any] = field(default_factory=dict)
    sent: dict[int, list[Any]] = field(default_factory=dict)


@dataclass(eq=False)
class _Arrival:
    """One backward pass reaching a leaf: the gradient that arrived; whether it found
    ``.grad`` as the last pass that added to it left it (``continues``), else what ``.grad``
    held (``before``: None if unset); whether it was added to ``.grad`` (not by
    ``torch.autograd.grad``), and ``.grad`` after it, kept until a pass continues from it."""

    pass_number: int
    arrived: Any
    continues: bool
    before: Any = None
    added: bool = False
    after: Any = None


class Recording:
    """Everything ``capture()`` saw: each op's result, and each gradient backward computed.

    Hooks stay on the recorded autograd nodes, so a backward pass run after
    the ``with`` block is recorded too. It keeps a copy of every value a
    recorded op used or made, so it is meant for scripts that fit on a slide.
    """

    def __init__(self) -> None:
        torch = _torch()
        self.calls: list[_Call] = []
        self._call_of: dict[tuple, _Call] = {}  # result key -> call
        self._owned: set = set()  # every node some call created
        self._outputs: dict[tuple, _Output] = {}  # result key -> its value then
        self._shares: dict[Any, _Shares] = {}  # node with several results -> what each sent
        self._leaves: dict[tuple[int, int, int], _Leaf] = {}  # (id, version, revision)
        self._revisions: dict[tuple[int, int], int] = {}
        self._born: dict[int, tuple[Any, int]] = {}  # id(tensor) -> (weakref, call index)
        self.made_by: dict[int, tuple] = {}  # id(tensor) -> (weakref, module, inputs): leave()
        self._gradients: dict[Any, _Gradients] = {}
        self._variables: dict[tuple, Any] = {}  # ("leaf", id) -> the leaf tensor
        self._counter = itertools.count()
        self.cell_names = torch_rnn.Names(_result_key)
        self._steps = itertools.count()
        # Each backward pass (autograd's graph task) numbered in the order it ran, and
        # whether it built a graph of the gradient (create_graph=True).
        self._pass_of_task: dict[int, int] = {}
        self.create_graph_passes: set[int] = set()
        self.arrivals: dict[int, list[_Arrival]] = {}  # id(leaf) -> each pass that reached it
        self._hooked_leaves: set[int] = set()
        self.gradient_nodes: set = set()  # autograd nodes of gradients made with create_graph
        self.differentiates_gradient = False  # whether a pass went through one of them
        self._mode: Any = None  # the function mode recording into this (set by capture)
        self._running = 0  # how many recorded calls are running now (their insides are theirs)
        # Autograd numbers its nodes as it creates them: anything numbered
        # below this was made before recording began.
        with torch.enable_grad():
            probe = torch.empty(0, requires_grad=True).view(0)
        self._first_sequence_nr = probe.grad_fn._sequence_nr() + 1

    def has_gradient(self, tensor: Any) -> bool:
        """Whether a recorded backward pass has reached ``tensor`` (an op's result); a
        gradient made with create_graph=True is refused (its graph is not recorded)."""
        if tensor.grad_fn is not None and tensor.grad_fn in self.gradient_nodes:
            raise TorchImportError(CREATE_GRAPH)
        return tensor.grad_fn is not None and tensor.grad_fn in self._gradients

    # -- called by the function mode for every torch call

    def _record(self, func: Any, args: tuple, kwargs: dict) -> Any:
        torch = sys.modules["torch"]
        from torch.utils._pytree import tree_flatten

        index = next(self._counter)
        function = _function_name(func)
        heard = bool(args) and (function == "backward" or func is torch.autograd.grad)
        if heard:
            # loss.backward(), torch.autograd.backward((loss, ...)) or
            # torch.autograd.grad(loss, xs): tell who listens, before the pass and after.
            roots = args[0] if isinstance(args[0], (tuple, list)) else args[:1]
            for listener in backward_listeners:
                listener(*roots)
        if func in (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad):
            result = self._run_backward(func, args, kwargs)
            if heard:
                for listener in backward_done_listeners:
                    listener(*roots)
            return result
        flat = tree_flatten((args, kwargs))[0]
        tensors = [x for x in flat if isinstance(x, torch.Tensor)]
        if not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            result = self._run(func, args, kwargs)
            self._note_births(result, index)
            return result
        written_out = torch_rnn.written_out(func, args, kwargs)
        if written_out is not None:
            # An LSTM or GRU: its gates op by op, each recorded as the script's own.
            with self._mode:
                return written_out(*args, namer=self.cell_names)
        swapped = bool(_REFLECTED.fullmatch(function) or function == "rsub") and len(flat) >= 2
        if swapped:
            # 2 - x arrives as x.__rsub__(2): draw the operands in the order of the math.
            flat[:2] = flat[1::-1]
        before = [self._operand_before(x, index, position) for position, x in enumerate(flat)]
        links = {operand.link[1] for operand in before
                 if isinstance(operand, _Operand) and operand.link and operand.link[0] == "node"}
        result = self._run(func, args, kwargs)
        self._note_births(result, index)
        # The results, and the arguments an in-place call changed (h[0] = 0 returns None).
        outputs = list({id(t): t for t in (*tree_flatten(result)[0], *tensors)
                        if isinstance(t, torch.Tensor) and t.grad_fn is not None
                        and t.grad_fn not in self._owned and t.grad_fn not in links}.values())
        first: _Call | None = None
        for position, output in enumerate(outputs):
            if first is None:
                results = sum(t.grad_fn is output.grad_fn for t in outputs)
                first = self._add_call(index, function, flat, before, output, results, swapped)
                if function == "__getitem__" and len(args) > 1 and ops.get(first.op).indexed:
                    first.picked = _index_kept(args[1])
            elif output.grad_fn is first.output:  # split's k and v: q's call walked their node
                op = first.op.rsplit("[", 1)[0]
                self._keep(output, dataclasses.replace(
                    first, op=f"{op}[{output.output_nr}]", result=output.output_nr))
            else:
                self._add_later_result(index, function, output, position, len(outputs))
        return result

    def _run_backward(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """A backward pass (its gradients are recorded by the hooks), not an op to draw;
        a gradient it returns with a graph of its own (create_graph=True) is kept note of."""
        from torch.utils._pytree import tree_flatten

        if self.gradient_nodes and args and self._reaches_gradient(tree_flatten(args[0])[0]):
            self.differentiates_gradient = True
        result = func(*args, **kwargs)
        for tensor in tree_flatten(result)[0]:
            if getattr(tensor, "grad_fn", None) is not None:
                self.gradient_nodes.add(tensor.grad_fn)
        return result

    def _reaches_gradient(self, roots: list) -> bool:
        """Whether a backward pass from ``roots`` goes through a gradient that an
        earlier pass made with create_graph=True (a second derivative)."""
        stack = [root.grad_fn for root in roots if getattr(root, "grad_fn", None) is not None]
        seen: set = set()
        while stack:
            node = stack.pop()
            if node in self.gradient_nodes:
                return True
            if node is None or node in seen:
                continue
            seen.add(node)
            stack.extend(next_node for next_node, _ in node.next_functions)
        return False

    def pass_now(self) -> int:
        """The number of the backward pass running now (0 for the first the recording saw);
        called from a hook, where grad mode is on only if the pass has create_graph=True."""
        torch = sys.modules["torch"]
        task = torch._C._current_graph_task_id()
        number = self._pass_of_task.setdefault(task, len(self._pass_of_task))
        if torch.is_grad_enabled():
            self.create_graph_passes.add(number)
        return number

    def _run(self, func: Any, args: tuple, kwargs: dict) -> Any:
        self._running += 1
        try:
            return func(*args, **kwargs)
        finally:
            self._running -= 1

    def _note_births(self, result: Any, index: int) -> None:
        torch = sys.modules["torch"]
        if isinstance(result, torch.Tensor) and result.grad_fn is None:
            born = self._born.get(id(result))
            if born is None or born[0]() is not result:  # (not an in-place call on it)
                self._born[id(result)] = (weakref.ref(result), index)

    def _operand_before(self, x: Any, index: int, position: int) -> Any:
        """What an argument is before the call runs (an in-place call will change it)."""
        torch = sys.modules["torch"]
        if not isinstance(x, torch.Tensor):
            return x
        node = x.grad_fn
        if node is None:
            return self._leaf_operand(x, (index, 0, position))
        key = _result_key(node, x.output_nr)
        operand = _Operand(key=key, link=key)
        output = self._outputs.get(key)
        if (node not in self._owned and key not in self._call_of
                and node._sequence_nr() >= self._first_sequence_nr):
            operand.key = ("problem", key, "{} has an autograd history no recorded call "
                           "made (a view of a tensor later changed in place, or a gradient "
                           "made with create_graph=True); backpropviz cannot draw it, so "
                           "clone() the view before changing its base")
        elif node in self._owned and output is None:
            operand.key = ("problem", key, "{} is one of the results a function computed "
                           "together with its first one, inside it; backpropviz draws such "
                           "a function only when the drawing uses its first result alone, so "
                           "draw a root computed from that one (backpropviz render SCRIPT ROOT)")
        elif output is not None and output.version != _version(x):
            operand.key = ("problem", key, "{} was changed in place without autograd "
                           "recording it (under torch.no_grad() or through .data) after it "
                           "was computed, so its drawn value would be wrong")
        return operand

    def _leaf_operand(self, tensor: Any, order: tuple) -> _Operand:
        # A leaf is kept as each op used it: a write through .data (an update
        # step, p.data -= lr * p.grad) does not move the version counter, so
        # the values are compared, and new ones are a new revision.
        base = (id(tensor), _version(tensor))
        revision = self._revisions.get(base, 0)
        leaf = self._leaves.get((*base, revision))
        if leaf is not None and not _same_values(leaf.value, tensor):
            revision = self._revisions[base] = revision + 1
            leaf = None
        key = (*base, revision)
        if leaf is None:
            born = self._born.get(id(tensor))
            if born is not None and born[0]() is tensor:
                order = (born[1], 2, base[1], revision)
            self._leaves[key] = _Leaf(tensor, tensor.detach().clone(), tensor.requires_grad,
                                      order, _storage_key(tensor))
        return _Operand(key=("leaf", *key),
                        link=("leaf", id(tensor)) if tensor.requires_grad else None)

    def _add_call(self, index: int, function: str, flat: list, before: list, output: Any,
                  results: int, swapped: bool) -> _Call:
        torch = sys.modules["torch"]
        node = output.grad_fn
        nodes, external = self._walk(node, before)
        custom = isinstance(node, torch.autograd.function.BackwardCFunction)
        # A torch.autograd.Function is drawn under its class's name, whatever it computes.
        op = function if custom else _op_name(
            function, type(node).__name__ if len(nodes) == 1 else None)
        if op == "transpose" and output.dim() > 2:  # (ᵀ reverses all axes: say which two)
            axes = ", ".join(str(x) for x in flat if isinstance(x, int) and not isinstance(x, bool))
            op = f"{function.strip('_')}({axes})"
        call = _Call(index, op, node, [], nodes, external, group=groups.current(),
                     result=output.output_nr, results=results)
        spec = ops.get(op)
        for position, (x, operand) in enumerate(zip(flat, before, strict=True)):
            if function == "batch_norm" and position in (1, 2) and flat[5:6] == [True]:
                continue  # (in training its running statistics are updated, not used)
            if isinstance(operand, _Operand):
                call.operands.append(operand)
            elif spec.number_operands and position < 2 and _is_number(x):
                if position == spec.exponent_at:
                    call.exponent = float(x)  # t ** 2: an attribute of the op, as in the engine
                else:
                    call.operands.append(_Operand(key=("const", index, position), number=float(x),
                                                  aten_name=("self", "other")[position ^ swapped]))
        if spec.exponent_at is not None and call.exponent is None and len(call.operands) == 1:
            saved = getattr(node, "_saved_exponent", None)  # torch.square(t) is t ** 2
            if _is_number(saved):
                call.exponent = float(saved)
        linked = {operand.link for operand in call.operands if operand.link is not None}
        for _, _, link in external:
            if link not in linked:  # a tensor the function reached without it being an argument
                linked.add(link)
                call.operands.append(self._operand_for_link(link, (index, 0, len(flat) + 1)))
        self._note_saved(call)
        if spec.masked:
            _note_mask(call, node, flat)
        if results > 1:
            # One op per result, split[0], split[1], ...: the IR's op has one result.
            call.op = f"{op}[{output.output_nr}]"
            if len(nodes) > 1:
                call.problem = (f"{function} returns several results of one computation made "
                                "inside it, and what each sent back cannot be told apart; "
                                "backpropviz can draw it only with one result")
            node.register_hook(_shares_hook(weakref.ref(self), node))
        self._keep(output, call)
        recording = weakref.ref(self)
        for position, created in enumerate(nodes):
            self._owned.add(created)
            created.register_hook(_gradient_hook(recording, call, position))
        for _, _, link in external:
            leaf = self._variables.get(link) if isinstance(link, tuple) else None
            if leaf is not None and id(leaf) not in self._hooked_leaves:
                self._hooked_leaves.add(id(leaf))
                _hook_leaf(recording, leaf)
        return call

    def _keep(self, output: Any, call: _Call) -> None:
        self.calls.append(call)
        self._call_of[call.key] = call
        self._outputs[call.key] = _Output(output.detach().clone(), _version(output),
                                          _storage_key(output))

    def _add_later_result(self, index: int, function: str, output: Any, position: int,
                          count: int) -> None:
        """A result of a function whose results come from different autograd nodes
        (multi_head_attention_forward's weights): kept, to refuse it if it is drawn."""
        node = output.grad_fn
        module = next((type(member).__name__ for member, _ in reversed(groups.current())
                       if not isinstance(member, str)), None)
        owner = f"{module}'s " if module else ""  # MultiheadAttention's
        problem = (f"{owner}{function} returns {count} "
                   "tensors computed together, and what each sent back cannot be told apart; "
                   "backpropviz draws such a function only when the drawing uses its first "
                   f"result alone (this one uses result {position + 1}), so draw a root "
                   "computed from its first result only (backpropviz render SCRIPT ROOT)")
        call = _Call(index, function, node, [], [], [], problem=problem,
                     result=output.output_nr)
        self._call_of[call.key] = call
        self._outputs[call.key] = _Output(output.detach().clone(), _version(output),
                                          _storage_key(output))

    def _walk(self, output: Any, before: list) -> tuple[list, list]:
        """The autograd nodes a call created, and the edges that leave them."""
        stop = {operand.link[1] for operand in before
                if isinstance(operand, _Operand) and operand.link and operand.link[0] == "node"}
        nodes, external, seen = [output], [], {output}
        stack = [output]
        while stack:
            node = stack.pop()
            for j, (target, number) in enumerate(node.next_functions):
                if target is None or target in seen:
                    continue
                variable = getattr(target, "variable", None)
                if variable is not None:  # AccumulateGrad: the edge into a leaf
                    self._variables[("leaf", id(variable))] = variable
                    external.append((node, j, ("leaf", id(variable))))
                elif (target in stop or target in self._owned
                      or target._sequence_nr() < self._first_sequence_nr):
                    external.append((node, j, _result_key(target, number)))
                else:
                    seen.add(target)
                    nodes.append(target)
                    stack.append(target)
        return nodes, external

    def _operand_for_link(self, link: Any, order: tuple) -> _Operand:
        if link[0] == "leaf":  # a leaf, met through its AccumulateGrad node
            return self._leaf_operand(self._variables[link], order)
        return _Operand(key=link, link=link)

    def _note_saved(self, call: _Call) -> None:
        """Which tensors the call's backward rules keep (read now, before backward frees them)."""
        torch = sys.modules["torch"]
        for node in call.nodes:
            for name in dir(node):
                if not name.startswith("_saved_") or name.endswith("_sym_sizes"):
                    continue
                try:
                    saved = getattr(node, name)
                except RuntimeError:
                    continue
                for tensor in saved if isinstance(saved, (tuple, list)) else (saved,):
                    if isinstance(tensor, torch.Tensor):
                        nbytes = tensor.numel() * tensor.element_size()
                        storage = _storage_key(tensor)
                        call.saved.append((storage, nbytes))
                        if len(call.nodes) == 1:
                            call.saved_names[name.removeprefix("_saved_")] = (storage, nbytes)

    def _hooked(self, call: _Call, position: int, pass_number: int, grad_inputs: tuple,
                grad_outputs: tuple) -> None:
        node = call.nodes[position]
        inputs = [None if g is None else g.detach().clone() for g in grad_inputs]
        output = grad_outputs[0] if grad_outputs else None
        output = None if output is None else output.detach().clone()
        record = self._gradients.get(node)
        step = next(self._steps)
        if record is None:
            self._gradients[node] = _Gradients(call, inputs, output, step, {pass_number: output},
                                               {pass_number: inputs})
            return
        # A second backward pass through the same graph adds, as .grad does.
        record.inputs = [_add(a, b) for a, b in zip(record.inputs, inputs, strict=True)]
        record.output = _add(record.output, output)
        record.step = step
        record.passes[pass_number] = _add(record.passes.get(pass_number), output)
        record.sent[pass_number] = inputs

    def _arrived(self, leaf: Any, pass_number: int, grad: Any) -> None:
        arrivals = self.arrivals.setdefault(id(leaf), [])
        previous = next((arrival for arrival in reversed(arrivals) if arrival.added), None)
        now = leaf.grad
        continues = previous is not None and now is not None and _same(now, previous.after)
        before = None if continues or now is None else now.detach().clone()
        arrivals.append(_Arrival(pass_number, grad.detach().clone(), continues, before))

    def _accumulated(self, leaf: Any, pass_number: int) -> None:
        arrivals = self.arrivals.get(id(leaf))
        if not (arrivals and arrivals[-1].pass_number == pass_number and leaf.grad is not None):
            return
        arrival = arrivals[-1]
        if arrival.continues:  # only the newest .grad of a run of passes is kept
            previous = next(earlier for earlier in reversed(arrivals[:-1]) if earlier.added)
            previous.after = None
        arrival.added = True
        arrival.after = leaf.grad.detach().clone()
        if leaf.grad.grad_fn is not None:  # backward(create_graph=True): a graph of .grad
            self.gradient_nodes.add(leaf.grad.grad_fn)

    def _share_out(self, node: Any, grad_inputs: tuple, grad_outputs: tuple) -> None:
        values = [None if kept is None else kept.value
                  for kept in (self._outputs.get(_result_key(node, number))
                               for number in range(len(grad_outputs)))]
        shares = _shares(node, grad_inputs, grad_outputs, values)
        record = self._shares.get(node)
        if record is not None:  # a second backward pass adds, as .grad does
            shares.inputs = [[_add(a, b) for a, b in zip(old, new, strict=True)]
                             for old, new in zip(record.inputs, shares.inputs, strict=True)]
            shares.outputs = [_add(a, b) for a, b in zip(record.outputs, shares.outputs,
                                                        strict=True)]
            shares.problem = record.problem or shares.problem
        self._shares[node] = shares


def _shares(node: Any, grad_inputs: tuple, grad_outputs: tuple, values: list) -> _Shares:
    """What ``node`` sends its operands for each of its results alone: its own backward
    rule (split's: the gradient put in its slice) run on that result's gradient, the
    others' zero. Their sum must be what it sent for all of them at once."""
    torch = sys.modules["torch"]
    rule = node.apply if isinstance(node, torch.autograd.function.BackwardCFunction) else node
    zeros = [None if value is None else torch.zeros_like(value) for value in values]
    shares: list[list[Any]] = []
    for number, grad in enumerate(grad_outputs):
        if grad is None:
            shares.append([None] * len(grad_inputs))
            continue
        alone = rule(*(grad if other == number else zero for other, zero in enumerate(zeros)))
        alone = alone if isinstance(alone, tuple) else (alone,)
        shares.append([None if g is None else g.detach().clone() for g in alone])
    problem = None
    for edge, total in enumerate(grad_inputs):
        parts = [share[edge] for share in shares if share[edge] is not None]
        if total is not None and parts and not torch.allclose(
                functools.reduce(operator.add, parts), total, rtol=1e-5, atol=1e-6):
            problem = (f"what {node.name()} sent back for its results one at a time does not "
                       "add up to what it sent for all of them, so its edges cannot be drawn")
    return _Shares(shares, [None if g is None else g.detach().clone() for g in grad_outputs],
                   problem)


def _note_mask(call: _Call, node: Any, flat: list) -> None:
    """Dropout's mask, as autograd keeps it (the factor it multiplies by: 0 or 1/(1 - p)),
    and its p (the first number the call was given)."""
    factor = getattr(node, "_saved_other", None)
    p = next((float(x) for x in flat[1:] if _is_number(x)), None)
    if factor is not None and p is not None:
        call.mask = (factor.detach() != 0).double().clone()
        call.rate = p


def _shares_hook(recording: weakref.ref, node: Any) -> Any:
    def hook(grad_inputs: tuple, grad_outputs: tuple) -> None:
        torch = sys.modules["torch"]
        live = recording()
        if live is not None:
            with torch._C.DisableTorchFunction(), torch.no_grad():
                live._share_out(node, grad_inputs, grad_outputs)
    return hook


def _gradient_hook(recording: weakref.ref, call: _Call, position: int) -> Any:
    # The hook holds the recording weakly: autograd nodes are C++ objects, and
    # a strong reference back to the recording would be a cycle Python cannot see.
    def hook(grad_inputs: tuple, grad_outputs: tuple) -> None:
        torch = sys.modules["torch"]
        live = recording()
        if live is not None:
            pass_number = live.pass_now()
            with torch._C.DisableTorchFunction(), torch.no_grad():
                live._hooked(call, position, pass_number, grad_inputs, grad_outputs)
    return hook


def _hook_leaf(recording: weakref.ref, leaf: Any) -> None:
    """Hooks on a leaf that note, for each backward pass, its ``.grad`` before the pass, the
    gradient that arrived and ``.grad`` after: what an optimizer step then reads."""
    torch = sys.modules["torch"]
    tensor = weakref.ref(leaf)  # held weakly, as the recording is: no cycle through the hooks

    def arrived(grad: Any) -> None:
        live, current = recording(), tensor()
        if live is not None and current is not None:
            pass_number = live.pass_now()
            with torch._C.DisableTorchFunction(), torch.no_grad():
                live._arrived(current, pass_number, grad)

    def accumulated(current: Any) -> None:
        live = recording()
        if live is not None:
            pass_number = live.pass_now()
            with torch._C.DisableTorchFunction(), torch.no_grad():
                live._accumulated(current, pass_number)

    leaf.register_hook(arrived)
    leaf.register_post_accumulate_grad_hook(accumulated)


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    return a if b is None else a + b


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _same_values(kept: Any, tensor: Any) -> bool:
    """Whether ``tensor`` still holds the values kept of it (nan equal to nan)."""
    current = tensor.detach()
    if kept.shape != current.shape:
        return False
    if kept.dtype == current.dtype and kept.equal(current):  # (one pass, nothing made)
        return True
    return bool(((kept == current) | (kept.isnan() & current.isnan())).all())


def _same(a: Any, b: Any) -> bool:
    """Whether two gradients hold the same numbers (False where their layout cannot say)."""
    try:
        return a.shape == b.shape and bool((a == b).all())
    except (RuntimeError, NotImplementedError):  # sparse gradients, among others
        return False


def _version(tensor: Any) -> int:
    """How often the tensor was changed in place (inference tensors cannot be, outside it)."""
    return 0 if tensor.is_inference() else tensor._version


def _storage_key(tensor: Any) -> tuple:
    """Where a tensor's numbers live: a saved tensor is a value if they live in the same place.

    The shape's layout is left out, so a view of a value (nn.Linear saves its
    weight transposed) is that value; its size is kept, so a slice is not.
    """
    try:
        return (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tensor.numel())
    except (RuntimeError, NotImplementedError):  # sparse and other storage-less layouts
        return ("no storage", id(tensor))


_active: list[Recording] = []
_last: list[Recording] = []


@contextmanager
def capture() -> Iterator[Recording]:
    """Record every torch op run inside the block: its result now, its gradient when backward runs.

    ``with capture() as recording: <run the script>``, then ``from_torch(L, …, recording)``.
    """
    _torch()
    import torch
    from torch.overrides import TorchFunctionMode

    recording = Recording()

    class _RecordingMode(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: tuple = (),
                               kwargs: dict | None = None) -> Any:
            return recording._record(func, args, kwargs or {})

    recording._mode = _RecordingMode()

    # A torch.autograd.Function's apply is no torch function: it is recorded by hand.
    function = torch.autograd.Function
    apply = vars(function)["apply"]

    def recorded_apply(cls: type, *args: Any, **kwargs: Any) -> Any:
        run = functools.partial(apply.__func__, cls)
        if _active and _active[-1] is recording and not recording._running:
            run.__name__ = cls.__name__  # type: ignore[attr-defined]
            with torch._C.DisableTorchFunction():
                return recording._record(run, args, kwargs)
        return run(*args, **kwargs)

    # Each nn.Module call is a group: its ops are drawn as one with --modules.
    from torch.nn.modules import module as modules

    opened: list = []

    def enter(module: Any, args: Any) -> None:
        opened.append(groups.enter(module))

    def leave(module: Any, args: Any, output: Any) -> None:
        if opened:
            groups.leave(opened.pop())
        if isinstance(output, torch.Tensor) and output.grad_fn is None:  # (frozen: an input)
            made = [(recording.made_by.get(id(arg)), arg) for arg in args if torch.is_tensor(arg)]
            recording.made_by[id(output)] = (weakref.ref(output), module, [  # (no tensor kept)
                by if by and by[0]() is arg else weakref.ref(arg) for by, arg in made])

    hooks = [modules.register_module_forward_pre_hook(enter),
             modules.register_module_forward_hook(leave, always_call=True)]
    _active.append(recording)
    _last[:] = [recording]
    function.apply = classmethod(recorded_apply)
    try:
        with recording._mode:
            yield recording
    finally:
        function.apply = apply
        _active.remove(recording)
        for hook in hooks:
            hook.remove()
