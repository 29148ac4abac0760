"""PyTorch import: record a torch script's values and gradients and turn them into the IR."""

from __future__ import annotations

import functools
import itertools
import numbers
import operator
import re
import sys
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from . import groups, ops
from .builder import Builder
from .engine import backward_listeners
from .errors import BackpropvizError
from .formatting import changed_note

__all__ = ["Recording", "TorchImportError", "capture", "from_torch", "is_torch_tensor"]

INSTALL_HINT = "install it with: pip install 'backpropviz[torch]'"


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
    called = ops.from_torch_function(name)
    if called in ops.names():
        return called
    if node_class is not None:
        canonical = ops.from_torch_node(re.sub(r"Backward\d*$", "", node_class))
        if canonical is not None:
            return canonical
    return called


# ---------------------------------------------------------------- recording


@dataclass
class _Operand:
    """One operand of a recorded call: a tensor (by value key) or a number written in the script.

    ``link`` is the autograd node the operand's gradient arrives at (its
    ``grad_fn``, or ``("leaf", id)`` for a leaf's AccumulateGrad), None when
    torch computes no gradient for it.
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
    rate: float | None = None  # dropout's p
    saved: list[tuple[Any, int]] = field(default_factory=list)  # (storage key, nbytes)
    # "self"/"other" -> (storage key, nbytes), for a number autograd saves as a tensor
    saved_names: dict[str, tuple[Any, int]] = field(default_factory=dict)
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
    """What the hooks saw at one autograd node, summed over backward passes."""

    inputs: list[Any]
    output: Any
    step: int


class Recording:
    """Everything ``capture()`` saw: each op's result, and each gradient backward computed.

    Hooks stay on the recorded autograd nodes, so a backward pass run after
    the ``with`` block is recorded too. It keeps a copy of every value a
    recorded op used or made, so it is meant for scripts that fit on a slide.
    """

    def __init__(self) -> None:
        torch = _torch()
        self.calls: list[_Call] = []
        self._call_of: dict[Any, _Call] = {}  # output node -> call
        self._owned: set = set()  # every node some call created
        self._outputs: dict[Any, _Output] = {}
        self._leaves: dict[tuple[int, int, int], _Leaf] = {}  # (id, version, revision)
        self._revisions: dict[tuple[int, int], int] = {}
        self._born: dict[int, tuple[Any, int]] = {}  # id(tensor) -> (weakref, call index)
        self._gradients: dict[Any, _Gradients] = {}
        self._variables: dict[tuple, Any] = {}  # ("leaf", id) -> the leaf tensor
        self._counter = itertools.count()
        self._steps = itertools.count()
        # Autograd numbers its nodes as it creates them: anything numbered
        # below this was made before recording began.
        with torch.enable_grad():
            probe = torch.empty(0, requires_grad=True).view(0)
        self._first_sequence_nr = probe.grad_fn._sequence_nr() + 1

    def has_gradient(self, tensor: Any) -> bool:
        """Whether a recorded backward pass has reached ``tensor`` (an op's result)."""
        return tensor.grad_fn is not None and tensor.grad_fn in self._gradients

    # -- called by the function mode for every torch call

    def _record(self, func: Any, args: tuple, kwargs: dict) -> Any:
        torch = sys.modules["torch"]
        from torch.utils._pytree import tree_flatten

        index = next(self._counter)
        function = _function_name(func)
        if function == "backward" and args:
            # loss.backward(), or torch.autograd.backward((loss, ...)): tell who listens.
            for listener in backward_listeners:
                listener(*(args[0] if isinstance(args[0], (tuple, list)) else args[:1]))
        flat = tree_flatten((args, kwargs))[0]
        tensors = [x for x in flat if isinstance(x, torch.Tensor)]
        if not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            result = func(*args, **kwargs)
            self._note_births(result, index)
            return result
        swapped = bool(_REFLECTED.fullmatch(function) or function == "rsub") and len(flat) >= 2
        if swapped:
            # 2 - x arrives as x.__rsub__(2): draw the operands in the order of the math.
            flat[:2] = flat[1::-1]
        before = [self._operand_before(x, index, position) for position, x in enumerate(flat)]
        links = {operand.link for operand in before if isinstance(operand, _Operand)}
        result = func(*args, **kwargs)
        self._note_births(result, index)
        # The results, and the arguments an in-place call changed (h[0] = 0 returns None).
        outputs = list({id(t): t for t in (*tree_flatten(result)[0], *tensors)
                        if isinstance(t, torch.Tensor) and t.grad_fn is not None
                        and t.grad_fn not in self._owned and t.grad_fn not in links}.values())
        new_nodes = list(dict.fromkeys(t.grad_fn for t in outputs))
        for output in outputs:
            self._add_call(index, function, flat, before, output, outputs, len(new_nodes),
                           swapped)
        return result

    def _note_births(self, result: Any, index: int) -> None:
        torch = sys.modules["torch"]
        if isinstance(result, torch.Tensor) and result.grad_fn is None:
            self._born[id(result)] = (weakref.ref(result), index)

    def _operand_before(self, x: Any, index: int, position: int) -> Any:
        """What an argument is before the call runs (an in-place call will change it)."""
        torch = sys.modules["torch"]
        if not isinstance(x, torch.Tensor):
            return x
        node = x.grad_fn
        if node is None:
            return self._leaf_operand(x, (index, 0, position))
        operand = _Operand(key=("node", node), link=node)
        output = self._outputs.get(node)
        if node not in self._owned and node._sequence_nr() >= self._first_sequence_nr:
            operand.key = ("problem", node, "{} has an autograd history no recorded call "
                           "made (a view of a tensor later changed in place, or a gradient "
                           "made with create_graph=True); backpropviz cannot draw it, so "
                           "clone() the view before changing its base")
        elif x.output_nr != 0:
            operand.key = ("problem", node, "{} is one result of an op with several (split, "
                           "unbind, iterating over a tensor); backpropviz draws ops with one "
                           "result, so use indexing instead")
        elif output is not None and output.version != _version(x):
            operand.key = ("problem", node, "{} was changed in place without autograd "
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
                  outputs: list, new_nodes: int, swapped: bool) -> None:
        node = output.grad_fn
        nodes, external = self._walk(node, before)
        op = _op_name(function, type(node).__name__ if len(nodes) == 1 else None)
        call = _Call(index, op, node, [], nodes, external, group=groups.current())
        spec = ops.get(op)
        for position, (x, operand) in enumerate(zip(flat, before, strict=True)):
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
        if new_nodes > 1 or any(t.output_nr != 0 for t in outputs):
            call.problem = (f"{function} returns several tensors that require grad; "
                            "backpropviz draws ops with one result")
        self.calls.append(call)
        self._call_of[node] = call
        self._outputs[node] = _Output(output.detach().clone(), _version(output),
                                      _storage_key(output))
        recording = weakref.ref(self)
        for position, created in enumerate(nodes):
            self._owned.add(created)
            created.register_hook(_gradient_hook(recording, call, position))

    def _walk(self, output: Any, before: list) -> tuple[list, list]:
        """The autograd nodes a call created, and the edges that leave them."""
        stop = {operand.link for operand in before if isinstance(operand, _Operand)}
        nodes, external, seen = [output], [], {output}
        stack = [output]
        while stack:
            node = stack.pop()
            for j, (target, _) in enumerate(node.next_functions):
                if target is None or target in seen:
                    continue
                variable = getattr(target, "variable", None)
                if variable is not None:  # AccumulateGrad: the edge into a leaf
                    self._variables[("leaf", id(variable))] = variable
                    external.append((node, j, ("leaf", id(variable))))
                elif (target in stop or target in self._owned
                      or target._sequence_nr() < self._first_sequence_nr):
                    external.append((node, j, target))
                else:
                    seen.add(target)
                    nodes.append(target)
                    stack.append(target)
        return nodes, external

    def _operand_for_link(self, link: Any, order: tuple) -> _Operand:
        if isinstance(link, tuple):  # a leaf, met through its AccumulateGrad node
            return self._leaf_operand(self._variables[link], order)
        return _Operand(key=("node", link), link=link)

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

    def _hooked(self, call: _Call, position: int, grad_inputs: tuple,
                grad_outputs: tuple) -> None:
        node = call.nodes[position]
        inputs = [None if g is None else g.detach().clone() for g in grad_inputs]
        output = grad_outputs[0] if grad_outputs else None
        output = None if output is None else output.detach().clone()
        record = self._gradients.get(node)
        step = next(self._steps)
        if record is None:
            self._gradients[node] = _Gradients(inputs, output, step)
            return
        # A second backward pass through the same graph adds, as .grad does.
        record.inputs = [_add(a, b) for a, b in zip(record.inputs, inputs, strict=True)]
        record.output = _add(record.output, output)
        record.step = step


def _note_mask(call: _Call, node: Any, flat: list) -> None:
    """Dropout's mask, as autograd keeps it (the factor it multiplies by: 0 or 1/(1 - p)),
    and its p (the first number the call was given)."""
    factor = getattr(node, "_saved_other", None)
    p = next((float(x) for x in flat[1:] if _is_number(x)), None)
    if factor is not None and p is not None:
        call.mask = (factor.detach() != 0).double().clone()
        call.rate = p


def _gradient_hook(recording: weakref.ref, call: _Call, position: int) -> Any:
    # The hook holds the recording weakly: autograd nodes are C++ objects, and
    # a strong reference back to the recording would be a cycle Python cannot see.
    def hook(grad_inputs: tuple, grad_outputs: tuple) -> None:
        torch = sys.modules["torch"]
        live = recording()
        if live is not None:
            with torch._C.DisableTorchFunction(), torch.no_grad():
                live._hooked(call, position, grad_inputs, grad_outputs)
    return hook


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    return a if b is None else a + b


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _same_values(kept: Any, tensor: Any) -> bool:
    """Whether ``tensor`` still holds the values kept of it (nan equal to nan)."""
    current = tensor.detach()
    return kept.shape == current.shape and bool(
        ((kept == current) | (kept.isnan() & current.isnan())).all())


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

    ``with capture() as recording: <run the script>``; then
    ``from_torch(L, names=namespace, recording=recording)``.
    """
    _torch()
    from torch.overrides import TorchFunctionMode

    recording = Recording()

    class _RecordingMode(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: tuple = (),
                               kwargs: dict | None = None) -> Any:
            return recording._record(func, args, kwargs or {})

    # Each nn.Module call is a group: its ops are drawn as one with --modules.
    from torch.nn.modules import module as modules

    opened: list = []

    def enter(module: Any, args: Any) -> None:
        opened.append(groups.enter(module))

    def leave(module: Any, args: Any, output: Any) -> None:
        if opened:
            groups.leave(opened.pop())

    hooks = [modules.register_module_forward_pre_hook(enter),
             modules.register_module_forward_hook(leave, always_call=True)]
    _active.append(recording)
    _last[:] = [recording]
    try:
        with _RecordingMode():
            yield recording
    finally:
        _active.remove(recording)
        for hook in hooks:
            hook.remove()


# ---------------------------------------------------------------- the IR


def _plain(tensor: Any) -> Any:
    """A torch tensor as the IR stores numbers: a float, or nested lists of floats."""
    if tensor is None:
        return None
    torch = sys.modules["torch"]
    if tensor.is_complex():
        raise TorchImportError("complex tensors cannot be drawn; backpropviz shows real numbers")
    with torch._C.DisableTorchFunction():
        return tensor.detach().to("cpu", torch.float64).tolist()


def from_torch(*roots: Any, names: Mapping[str, Any] | None = None,
               recording: Recording | None = None) -> nx.MultiDiGraph:
    """The IR of everything the torch tensors ``roots`` depend on, values and gradients included.

    The tensors must have been computed under ``capture()``; ``recording`` is
    what it yielded (by default the innermost active capture, else the last
    one). ``names`` maps names to tensors (a script's namespace will do).
    Gradients are torch's own: a tensor torch computes none for (an input
    without ``requires_grad``, a plain number) has grad None.
    """
    torch = _torch()
    if not roots:
        raise TorchImportError("from_torch needs at least one tensor to draw")
    recording = recording or (_active or _last or [None])[-1]
    with torch._C.DisableTorchFunction():
        return _graph(torch, roots, names, recording)


def _graph(torch: Any, roots: tuple, names: Mapping[str, Any] | None,
           recording: Recording | None) -> nx.MultiDiGraph:
    for root in roots:
        if not isinstance(root, torch.Tensor):
            raise TorchImportError(f"from_torch draws torch tensors, got {type(root).__name__}")
        if root.grad_fn is None:
            name = next((f"{name!r} " for name, obj in (names or {}).items() if obj is root), "")
            raise TorchImportError(
                f"the tensor {name}of shape {tuple(root.shape)} has no grad_fn, so there is no "
                "graph to draw; compute it from tensors created with requires_grad=True")
    if recording is None:
        raise TorchImportError("no recording: run the torch code inside "
                               "`with backpropviz.torch_import.capture():` so its values are kept")
    return _Builder(recording, names).build(roots)


class _Builder:
    """Turns the calls a recording holds into IR nodes, in the order the script ran them."""

    def __init__(self, recording: Recording, names: Mapping[str, Any] | None) -> None:
        self.recording = recording
        self.name_of: dict[Any, str] = {}
        self.module_name: dict[int, str] = {}  # id(module) -> "model.0"
        self.modules: dict[str, str] = {}  # the groups that are module calls: their classes
        module = getattr(sys.modules.get("torch.nn"), "Module", ())
        for name, obj in (names or {}).items():
            if name.startswith("_"):
                continue
            if is_torch_tensor(obj):
                key = ("node", obj.grad_fn) if obj.grad_fn is not None else ("leaf", id(obj))
                self.name_of.setdefault(key, name)
            elif isinstance(obj, module):  # a network: its parameters as net.0.weight, ...
                for path, part in obj.named_modules():
                    self.module_name.setdefault(id(part), f"{name}.{path}" if path else name)
                for parameter_name, parameter in obj.named_parameters():
                    self.name_of.setdefault(("leaf", id(parameter)), f"{name}.{parameter_name}")
                # ... and its buffers (batch norm's running statistics) as net.1.running_mean
                for buffer_name, buffer in obj.named_buffers():
                    self.name_of.setdefault(("leaf", id(buffer)), f"{name}.{buffer_name}")

    def build(self, roots: tuple) -> nx.MultiDiGraph:
        calls = self._calls_needed(roots)
        self.calls = groups.numbered(call.group for call in calls)
        root_keys = [("node", root.grad_fn) for root in roots]

        # Every IR node gets a place in the order the script made it: a leaf
        # where it was created (or first used), a number where it was used,
        # an op and its result where the call ran.
        entries: list[tuple[tuple, str, Any]] = []
        keys_done = set()
        for call in calls:
            for position, operand in enumerate(call.operands):
                if operand.key in keys_done or operand.key[0] == "node":
                    continue
                keys_done.add(operand.key)
                if operand.key[0] == "leaf":
                    order = self.recording._leaves[operand.key[1:]].order
                else:
                    order = (call.index, 0, position)
                entries.append((order, "value", operand))
            entries.append(((call.index, 1, 0), "op", call))
            entries.append(((call.index, 2, -1), "result", call))
        entries.sort(key=lambda entry: entry[0])

        saves, inner_bytes = self._saves(calls)
        stored = {key: nbytes for kept in saves.values() for key, nbytes in kept.items()}
        build = Builder()
        contributions: dict[Any, list] = {}
        sent_by: dict[_Call, list] = {}
        for _, kind, item in entries:
            if kind == "op":
                sent = sent_by[item] = self._sent(item)
                extra = {"inner_bytes": inner_bytes[item]} if inner_bytes[item] else {}
                build.add_op(item, item.op, [operand.key for operand in item.operands],
                             exponent=item.exponent, sent=[_plain(grad) for grad in sent],
                             saves=saves[item], **self._op_attrs(item), **extra)
                for operand, grad in zip(item.operands, sent, strict=True):
                    if grad is not None:
                        contributions.setdefault(operand.key, []).append(grad)
                continue
            key = ("node", item.output) if kind == "result" else item.key
            build.add_value(key, nbytes=stored.get(key, 0),
                            made_by=item if kind == "result" else None,
                            **self._value_attrs(key, item, root_keys))

        G, value_id = build.graph, build.value_ids
        gradients = self.recording._gradients
        processed = [call for call in calls if any(node in gradients for node in call.nodes)]
        processed.sort(key=lambda call: max(gradients[node].step for node in call.nodes
                                            if node in gradients))
        self._running_sums(G, processed, sent_by, value_id, build.op_ids)
        # A seed is a gradient that came from outside the drawn graph: the 1
        # that backward() starts with at the loss.
        seeds = {key: G.nodes[vid]["grad"] for key, vid in value_id.items()
                 if G.nodes[vid]["grad"] is not None and key not in contributions}
        notes = [changed_note(G.nodes[vid]["label"], leaf.value, leaf.tensor.detach())
                 for key, vid in value_id.items() if key[0] == "leaf"
                 for leaf in (self.recording._leaves[key[1:]],)
                 if not _same_values(leaf.value, leaf.tensor)]
        modules = {"module_groups": sorted(self.modules),
                   "module_classes": dict(sorted(self.modules.items()))} if self.modules else {}
        return build.finish(root_keys, backward_order=processed, seeds=seeds, notes=notes,
                            **modules)

    @staticmethod
    def _running_sums(G: nx.MultiDiGraph, processed: list[_Call], sent_by: dict,
                      value_id: dict, op_id: dict) -> None:
        """Each operand edge's ``running`` sum: the operand's gradient once its share arrived.

        Autograd adds what arrives at a tensor in the order it arrives (its
        input buffer, or a leaf's AccumulateGrad), so the sums follow the
        backward order; a tensor's last sum is autograd's own gradient for it
        (hooked where it is an op's result, the leaf's sum of arrivals where it
        is a leaf). Only a sum between the first and the last of three or more
        contributions is one autograd never shows: it is added here, in that order.
        """
        running: dict[Any, Any] = {}
        last_edge: dict[Any, tuple] = {}
        for call in processed:
            for arg, operand in enumerate(call.operands):
                grad = sent_by[call][arg]
                if grad is None:
                    continue
                previous = running.get(operand.key)
                running[operand.key] = grad if previous is None else previous + grad
                edge = (value_id[operand.key], op_id[call], arg)
                G.edges[edge]["running"] = _plain(running[operand.key])
                last_edge[operand.key] = edge
        for key, edge in last_edge.items():
            attrs = G.nodes[value_id[key]]
            if key[0] == "leaf" and attrs["grad"] is None:
                attrs["grad"] = G.edges[edge]["running"]
            elif attrs["grad"] is not None:
                G.edges[edge]["running"] = attrs["grad"]

    def _calls_needed(self, roots: tuple) -> list[_Call]:
        """The recorded calls the roots depend on, in the order they ran."""
        needed: dict[int, _Call] = {}
        stack = [root.grad_fn for root in roots]
        while stack:
            node = stack.pop()
            call = self.recording._call_of.get(node)
            if call is None:
                raise TorchImportError(
                    f"the value of a tensor made by {node.name()} was not recorded: run all "
                    "of the torch code inside `with backpropviz.torch_import.capture():`")
            if call.index in needed:
                continue
            if call.problem is not None:
                raise TorchImportError(call.problem)
            needed[call.index] = call
            for operand in call.operands:
                if operand.key[0] == "problem":
                    _, culprit, message = operand.key
                    name = self.name_of.get(("node", culprit))
                    raise TorchImportError(message.format(
                        f"the tensor {name!r}" if name else f"a tensor made by {culprit.name()}"))
                if operand.key[0] == "node":
                    stack.append(operand.key[1])
        return [needed[index] for index in sorted(needed)]

    def _sent(self, call: _Call) -> list[Any]:
        """The gradient each operand edge carried: what autograd sent along it, summed."""
        gradients = self.recording._gradients
        by_link: dict[Any, list] = {}
        for node, j, link in call.external:
            record = gradients.get(node)
            grad = None if record is None else record.inputs[j]
            if grad is not None:
                by_link.setdefault(link, []).append(grad)
        sharing: dict[Any, list[int]] = {}
        for arg, operand in enumerate(call.operands):
            if operand.link is not None:
                sharing.setdefault(operand.link, []).append(arg)
        sent: list[Any] = [None] * len(call.operands)
        for link, args in sharing.items():
            grads = by_link.get(link, [])
            if len(args) == len(grads) and len(call.nodes) == 1:
                # a * a: one node, one edge per operand, in argument order
                for arg, grad in zip(args, grads, strict=True):
                    sent[arg] = grad
            elif grads:
                # A composite function used the tensor twice inside: its
                # edges cannot be told apart, so the first carries their sum.
                sent[args[0]] = functools.reduce(operator.add, grads)
        return sent

    def _op_attrs(self, call: _Call) -> dict:
        """What the IR says of a call beyond its op: gates, dropout's mask, its groups."""
        attrs: dict[str, Any] = {}
        if call.operands and ops.get(call.op).gate is not None:
            dead = ops.dead_units(call.op, self._tensor_value(call.operands[0].key))
            attrs["dead"] = dead
        if call.mask is not None:
            attrs.update(mask=_plain(call.mask), p=call.rate, dead=(call.mask == 0).tolist())
        if call.group:
            attrs["group"] = [self.group_name(member) for member, _ in call.group]
            attrs["group_calls"] = [self.calls[number] for _, number in call.group]
        return attrs

    def group_name(self, member: Any) -> str:
        """A group's name: the script's, or a module's path (``model.0``), else its class."""
        if isinstance(member, str):
            return member
        name = self.module_name.get(id(member), type(member).__name__)
        self.modules[name] = type(member).__name__
        return name

    def _tensor_value(self, key: Any) -> Any:
        if key[0] == "node":
            return self.recording._outputs[key[1]].value
        return self.recording._leaves[key[1:]].value

    def _value_attrs(self, key: Any, item: Any, root_keys: list) -> dict:
        if key[0] == "const":
            return {"label": None, "data": item.number, "grad": None, "shape": (),
                    "role": "const"}
        value = self._tensor_value(key)
        if key[0] == "node":
            record = self.recording._gradients.get(key[1])
            grad = None if record is None else record.output
            role = "output" if key in root_keys else "intermediate"
            label = self.name_of.get(key)
        else:
            leaf = self.recording._leaves[key[1:]]
            grad = None  # filled in from the edges, which carry torch's numbers
            role = "param" if leaf.requires_grad else "input"
            label = self.name_of.get(("leaf", key[1]))
        return {"label": label, "data": _plain(value), "grad": _plain(grad),
                "shape": tuple(value.shape), "role": role}

    def _saves(self, calls: list[_Call]) -> tuple[dict[_Call, dict[Any, int]], dict[_Call, int]]:
        """What each drawn call's backward rules keep: the values (key -> bytes kept), and the
        bytes of tensors it keeps that are no drawn value (made inside a composite function).

        A saved tensor is a value if its numbers live where the value's do: the
        call's own result or operands first (a transpose shares its base's
        numbers), else any value's. A tensor saved twice counts once.
        """
        where: dict[Any, Any] = {}  # storage -> value key, for every value of the drawing
        for call in calls:
            for operand in call.operands:
                if operand.key[0] == "leaf":
                    where.setdefault(self.recording._leaves[operand.key[1:]].storage,
                                     operand.key)
            where[self.recording._outputs[call.output].storage] = ("node", call.output)
        saves: dict[_Call, dict[Any, int]] = {}
        inner_bytes: dict[_Call, int] = {}
        for call in calls:
            own = {self.recording._outputs[call.output].storage: ("node", call.output)}
            for operand in call.operands:
                if operand.key[0] == "leaf":
                    own.setdefault(self.recording._leaves[operand.key[1:]].storage, operand.key)
                elif operand.key[0] == "node":
                    own.setdefault(self.recording._outputs[operand.key[1]].storage, operand.key)
            numbers = {storage: operand.key for operand in call.operands
                       if operand.key[0] == "const" and operand.aten_name in call.saved_names
                       for storage, _ in (call.saved_names[operand.aten_name],)}
            kept: dict[Any, int] = {}
            inner: dict[Any, int] = {}
            for storage, nbytes in call.saved:
                key = own.get(storage) or numbers.get(storage) or where.get(storage)
                if key is None:
                    inner[storage] = max(nbytes, inner.get(storage, 0))
                else:
                    kept[key] = max(nbytes, kept.get(key, 0))
            saves[call] = kept
            inner_bytes[call] = sum(inner.values())
        # A value two calls keep is one tensor: counted with the larger of what they keep.
        largest: dict[Any, int] = {}
        for kept in saves.values():
            for key, nbytes in kept.items():
                largest[key] = max(nbytes, largest.get(key, 0))
        for kept in saves.values():
            for key in kept:
                kept[key] = largest[key]
        return saves, inner_bytes
