"""PyTorch import: the IR of a torch script's tensors, from what ``capture()`` recorded."""

from __future__ import annotations

import contextlib
import functools
import itertools
import operator
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import networkx as nx

from . import groups, ops
from .builder import Builder, Producer
from .formatting import changed_note
from .ir import LIST_ENTRIES
from .torch_passes import (
    drawn_from,
    pass_tops,
    passes_and_leaves,
    passes_through,
    refuse_create_graph,
    seeds_of_passes,
)
from .torch_record import (
    CREATE_GRAPH,
    Recording,
    TorchImportError,
    _active,
    _Call,
    _last,
    _result_key,
    _same_values,
    _torch,
    capture,
    is_torch_tensor,
)

__all__ = ["PRODUCER", "Recording", "TorchImportError", "capture", "from_torch", "is_torch_tensor"]


# How many changed tensors the legend names one by one, each on its line (more, one line:
# as the other engines' legend says a training loop's update, from four parameters on).
_CHANGED_NOTES = 3


class TorchProducer(Producer):
    """PyTorch: a script that imports torch runs under ``capture()``; its tensors' IR is
    read from that recording."""

    name = "PyTorch"
    package = "torch"

    def record(self) -> Any:
        return capture()

    def claims(self, obj: Any, recording: Any) -> bool:
        return recording is not None and is_torch_tensor(obj)

    def walk(self, nodes: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
        return ({name: t.grad_fn for name, t in nodes.items() if t.grad_fn is not None},
                lambda fn: [f for f, _ in fn.next_functions if f is not None])

    def has_gradient(self, root: Any, recording: Any) -> bool:
        return recording.has_gradient(root)

    def build(self, roots: Any, names: Mapping[str, Any] | None, recording: Any,
              backward: bool) -> nx.MultiDiGraph:
        return from_torch(*roots, names=names, recording=recording)


PRODUCER = TorchProducer()


# ---------------------------------------------------------------- the IR


def _plain(tensor: Any) -> Any:
    """A torch tensor as the IR stores numbers: a float, nested lists of floats, or a
    float64 array for a large one (ir.plain_number)."""
    if tensor is None:
        return None
    torch = sys.modules["torch"]
    if tensor.is_complex():
        raise TorchImportError("complex tensors cannot be drawn; backpropviz shows real numbers")
    with torch._C.DisableTorchFunction():
        numbers = tensor.detach().cpu()
        if numbers.numel() <= LIST_ENTRIES:
            return numbers.to(torch.float64).tolist()
        if numbers.dtype not in (torch.float32, torch.float64):
            numbers = numbers.to(torch.float64)
        # torch's own numbers in numpy's hands: float32 kept as float32 (each is a float64
        # exactly), copied so that nothing the script does later changes them
        return numbers.numpy().copy()


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
    if recording is not None and recording.differentiates_gradient:
        raise TorchImportError(CREATE_GRAPH)
    with torch._C.DisableTorchFunction(), _one_thread(torch):
        return _graph(torch, roots, names, recording)


@contextlib.contextmanager
def _one_thread(torch: Any) -> Iterator[None]:
    """torch on one thread while the IR is built (its own number of threads given back
    after). Building it passes over the recorded numbers (comparisons, copies to numpy),
    each pass bound by memory, not arithmetic; on a busy machine torch's pool waits for
    a second core at every one (ResNet-18's IR: 2.4-3.2 s on two threads at a load of
    7-9 on 2 cores, 0.9-1.2 s on one; alike at a load of 3)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


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
        raise TorchImportError("no recording: from_torch draws tensors computed inside "
                               "`with backpropviz.torch_import.capture():`, so run the torch "
                               "code there first")
    return _Builder(recording, names).build(roots)



def _reduced_axes(before: tuple[int, ...], after: tuple[int, ...]) -> dict[str, Any]:
    """A sum's or mean's axes (and whether it kept them), read off its operand's shape and
    its result's where they tell them apart: x.mean((2, 3), keepdim=True) of 1×4×6×6 is
    1×4×1×1, axes 2 and 3; 2×2 summed to 2 could be either axis, and says none."""
    if not after or after == before or len(before) > 8:  # (past 8 axes: too many ways)
        return {}
    if len(after) == len(before):
        axes = tuple(i for i, (n, m) in enumerate(zip(before, after, strict=True)) if n != m)
        return {"axis": axes[0] if len(axes) == 1 else axes, "keepdims": True}
    fits = [axes for axes in itertools.combinations(range(len(before)), len(before) - len(after))
            if tuple(n for i, n in enumerate(before) if i not in axes) == after]
    return {"axis": fits[0][0] if len(fits[0]) == 1 else fits[0]} if len(fits) == 1 else {}


class _Builder:
    """Turns the calls a recording holds into IR nodes, in the order the script ran them."""

    def __init__(self, recording: Recording, names: Mapping[str, Any] | None) -> None:
        self.recording = recording
        self.name_of: dict[Any, str] = {}
        self.module_name: dict[int, str] = {}  # id(module) -> "model.0"
        self.modules: dict[str, str] = {}  # the groups that are module calls: their classes
        self._script_names: set[str] | None = None
        module = getattr(sys.modules.get("torch.nn"), "Module", ())
        for name, obj in (names or {}).items():
            if name.startswith("_"):
                continue
            if is_torch_tensor(getattr(obj, "data", None)) and hasattr(obj, "batch_sizes"):
                name, obj = f"{name}.data", obj.data  # a packed sequence's rows
            if is_torch_tensor(obj):
                key = (_result_key(obj.grad_fn, obj.output_nr) if obj.grad_fn is not None
                       else ("leaf", id(obj)))
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
        root_keys, calls, passes = self._roots_of_passes(
            [_result_key(root.grad_fn, root.output_nr) for root in roots])
        self.calls = groups.numbered(call.group for call in calls)

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
            # split's ops one after another, each followed by its result
            entries.append(((call.index, 1, 2 * call.result), "op", call))
            entries.append(((call.index, 1, 2 * call.result + 1), "result", call))
        entries.sort(key=lambda entry: entry[0])

        saves, inner_bytes = self._saves(calls)
        stored = {key: nbytes for kept in saves.values() for key, nbytes in kept.items()}
        build = Builder()
        sent_by: dict[_Call, list] = {}
        for _, kind, item in entries:
            if kind == "op":
                sent = sent_by[item] = self._sent(item)
                extra = {"inner_bytes": inner_bytes[item]} if inner_bytes[item] else {}
                build.add_op(item, item.op, [operand.key for operand in item.operands],
                             exponent=item.exponent, sent=[_plain(grad) for grad in sent],
                             saves=saves[item], **self._op_attrs(item), **extra)
                continue
            key = item.key
            build.add_value(key, nbytes=stored.get(key, 0),
                            made_by=item if kind == "result" else None,
                            **self._value_attrs(key, item, root_keys))

        G, value_id = build.graph, build.value_ids
        gradients = self.recording._gradients
        processed = [call for call in calls if any(node in gradients for node in call.nodes)]
        processed.sort(key=lambda call: max(gradients[node].step for node in call.nodes
                                            if node in gradients))
        changed = [(G.nodes[vid]["label"], leaf) for key, vid in value_id.items()
                   if key[0] == "leaf" for leaf in (self.recording._leaves[key[1:]],)
                   if not _same_values(leaf.value, leaf.tensor)]
        # (a parameter changed since is an update; a buffer, as a batch norm's running
        # statistics, the forward pass changed itself)
        notes = [changed_note(label, leaf.value, leaf.tensor.detach(),
                              updated=leaf.tensor.requires_grad)
                 for label, leaf in changed[:_CHANGED_NOTES]]
        if len(changed) > _CHANGED_NOTES:  # a ResNet's 40 batch-norm statistics: one line
            first, second = (label or "an unnamed input" for label, _ in changed[:2])
            notes = [f"{len(changed)} tensors changed after the forward pass used them "
                     f"({first}, {second} and {len(changed) - 2} more); a picture draws "
                     "them as it used them (a view of modules holds them inside)"]
        leaves = passes_and_leaves(self.recording, calls, passes, sent_by,
                                   {key: G.nodes[vid]["label"] for key, vid in value_id.items()})
        for key, grad in leaves.grads.items():
            G.nodes[value_id[key]]["grad"] = _plain(grad)
        for key, count in leaves.passes.items():
            G.nodes[value_id[key]]["passes"] = count
        notes += leaves.notes
        self._running_sums(G, processed, sent_by, value_id, build.op_ids, leaves.earlier)
        seeds, entered = seeds_of_passes(self.recording, calls, passes, self._sent)
        if entered:
            notes.append("a backward pass started at a later value, beyond the drawing; the "
                         "gradients drawn at its top come from there")
        modules = {"module_groups": sorted(self.modules),
                   "module_classes": dict(sorted(self.modules.items()))} if self.modules else {}
        return build.finish(root_keys, backward_order=processed,
                            seeds={key: _plain(seed) for key, seed in seeds.items()},
                            notes=notes, **modules, **({"entered": True} if entered else {}),
                            **({"backward_passes": len(passes)} if len(passes) > 1 else {}))

    def _roots_of_passes(self, nodes: list) -> tuple[list, list[_Call], list[int]]:
        """The roots to draw: the ones asked for, and the roots of every other backward pass
        that went through their graph (two losses from one trunk), so each gradient drawn
        is the sum of what is drawn; with the calls they need and those passes, in order."""
        nodes = list(dict.fromkeys(nodes))
        while True:
            calls = self._calls_needed(nodes)
            passes = passes_through(self.recording, calls)
            drawn = {call.key for call in calls}
            added = [top.key for number in passes
                     for top in pass_tops(self.recording, number)
                     if top.key not in drawn
                     and not drawn_from(self._calls_needed([top.key]), nodes)]
            if not added:
                refuse_create_graph(self.recording, calls, passes)
                return nodes, calls, passes
            nodes += dict.fromkeys(added)

    @staticmethod
    def _running_sums(G: nx.MultiDiGraph, processed: list[_Call], sent_by: dict,
                      value_id: dict, op_id: dict, earlier: dict) -> None:
        """Each operand edge's ``running`` sum: the operand's gradient once its share arrived.

        Autograd adds what arrives at a tensor in the order it arrives (its
        input buffer, or a leaf's AccumulateGrad), so the sums follow the
        backward order; a tensor's last sum is autograd's own gradient for it
        (hooked where it is an op's result, the leaf's sum of arrivals where it
        is a leaf). Only a sum between the first and the last of three or more
        contributions is one autograd never shows: it is added here, in that order.
        A leaf's sums start from ``earlier``: the share of backward passes not drawn,
        which the leaf's ``held_before`` keeps.
        """
        running: dict[Any, Any] = dict(earlier)
        for key, held in earlier.items():
            G.nodes[value_id[key]]["held_before"] = _plain(held)
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

    def _calls_needed(self, roots: list) -> list[_Call]:
        """The recorded calls the roots (their value keys) depend on, in the order they ran."""
        needed: dict[tuple, _Call] = {}
        stack = list(roots)
        while stack:
            key = stack.pop()
            if key[1] in self.recording.gradient_nodes:
                raise TorchImportError(CREATE_GRAPH)
            call = self.recording._call_of.get(key)
            if call is None:
                raise TorchImportError(
                    f"the value of a tensor made by {key[1].name()} was not recorded: compute "
                    "it inside the script (or, from Python, inside "
                    "`with backpropviz.torch_import.capture():`)")
            if key in needed:
                continue
            shares = self.recording._shares.get(call.output)
            problem = call.problem or (shares.problem if shares is not None else None)
            if problem is not None:
                raise TorchImportError(problem)
            needed[key] = call
            for operand in call.operands:
                if operand.key[0] == "problem":
                    _, culprit, message = operand.key
                    if culprit[1] in self.recording.gradient_nodes:
                        raise TorchImportError(CREATE_GRAPH)
                    name = self.name_of.get(culprit)
                    raise TorchImportError(message.format(f"the tensor {name!r}" if name else
                                                          f"a tensor made by {culprit[1].name()}"))
                if operand.key[0] == "node":
                    stack.append(operand.key)
        return sorted(needed.values(), key=lambda call: (call.index, call.result))

    def _sent(self, call: _Call, pass_number: int | None = None) -> list[Any]:
        """The gradient each operand edge carried: what autograd sent along it, summed
        over the passes (or in pass ``pass_number`` alone)."""
        gradients = self.recording._gradients
        shares = self.recording._shares.get(call.output) if call.results > 1 else None
        by_link: dict[Any, list] = {}
        for node, j, link in call.external:
            if shares is not None:  # split's q: only what q's gradient sent
                grad = shares.inputs[call.result][j]
            else:
                record = gradients.get(node)
                inputs = None if record is None else record.inputs if pass_number is None \
                    else record.sent.get(pass_number)
                grad = None if inputs is None else inputs[j]
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
            operand = self._tensor_value(call.operands[0].key)
            # (a large mask stays an array, as large numbers do)
            attrs["dead"] = (ops.get(call.op).gate(operand).numpy()
                             if operand.numel() > LIST_ENTRIES
                             else ops.dead_units(call.op, operand))
        if call.mask is not None:
            dead = (call.mask == 0).numpy()
            attrs.update(mask=_plain(call.mask), p=call.rate,
                         dead=dead if dead.size > LIST_ENTRIES else dead.tolist())
        if call.picked is not None:
            attrs["index"] = ops.index_text(self._index_written(call.picked))
        if ops.get(call.op).reduces and len(call.operands) == 1:
            attrs.update(_reduced_axes(tuple(self._tensor_value(call.operands[0].key).shape),
                                       tuple(self._tensor_value(call.key).shape)))
        if call.group:
            attrs["group"] = [self.group_name(member) for member, _ in call.group]
            attrs["group_calls"] = [self.calls[number] for _, number in call.group]
        return attrs

    def _index_written(self, index: Any) -> Any:
        """A call's kept index with each tensor in it as its name in the script (``target``)
        or its numbers (``[2, 0]``, ``2``), for ops.index_text."""
        if isinstance(index, tuple) and len(index) == 3 and index[0] == "tensor":
            name = self.name_of.get(("leaf", index[1]))
            return name if name else index[2].numpy()
        if isinstance(index, tuple):
            return tuple(self._index_written(part) for part in index)
        if isinstance(index, list):  # x[[0, 2]]: one index array
            written = [self._index_written(part) for part in index]
            return written if all(isinstance(part, int) for part in written) else "…"
        return index

    def group_name(self, member: Any) -> str:
        """A group's name: the script's, or a module's path (``model.0``), else its class."""
        if isinstance(member, str):
            return member
        name = self.module_name.get(id(member), type(member).__name__)
        self.modules[name] = type(member).__name__
        return name

    def _tensor_value(self, key: Any) -> Any:
        if key[0] == "node":
            return self.recording._outputs[key].value
        return self.recording._leaves[key[1:]].value

    def _value_attrs(self, key: Any, item: Any, root_keys: list) -> dict:
        if key[0] == "const":
            return {"label": None, "data": item.number, "grad": None, "shape": (),
                    "role": "const"}
        value = self._tensor_value(key)
        if key[0] == "node":
            call = self.recording._call_of[key]
            if call.results > 1:  # split's q: its own gradient, of the several its node got
                shares = self.recording._shares.get(call.output)
                grad = None if shares is None else shares.outputs[call.result]
            else:
                record = self.recording._gradients.get(key[1])
                grad = None if record is None else record.output
            role = "output" if key in root_keys else "intermediate"
            label = self.name_of.get(key) or self._cell_name(
                self.recording.cell_names.labels.get(key))
        else:
            leaf = self.recording._leaves[key[1:]]
            role = "param" if leaf.requires_grad else "input"
            label = self.name_of.get(("leaf", key[1])) or self._indexed_name(leaf.tensor) \
                or self._cell_name(self.recording.cell_names.leaf_labels.get(key[1])) \
                or self._made_name(leaf.tensor)
            return {"label": label, "data": _plain(value),
                    "grad": None,  # filled in from the edges, which carry torch's numbers
                    "shape": tuple(value.shape), "role": role,
                    "live": (leaf.tensor, _plain)}
        return {"label": label, "data": _plain(value), "grad": _plain(grad),
                "shape": tuple(value.shape), "role": role}

    def _cell_name(self, label: str | None) -> str | None:
        """``label``, a name a written-out cell gave a value (torch_rnn: h1, r2, h0),
        unless the script names something else so (its own h1)."""
        if label is None:
            return None
        if self._script_names is None:
            self._script_names = set(self.name_of.values())
        return None if label in self._script_names else label

    def _made_name(self, tensor: Any) -> str | None:
        """An unnamed input that a named module made without autograd (a frozen
        backbone's features, or a module run under no_grad) named by that call:
        ``backbone(x)``, ``encoder(embed(tokens))``; its inputs "…" past two calls."""
        made = self.recording.made_by.get(id(tensor))
        return None if made is None or made[0]() is not tensor else self._call_name(made)

    def _call_name(self, made: tuple, depth: int = 0) -> str | None:
        """A module call the recording noted (torch_record's made_by): the module's name
        and its inputs' (an input a call it noted made, by that call, one level down)."""
        _, module, inputs = made
        if id(module) not in self.module_name:
            return None
        written = [(self._call_name(arg, depth + 1) if depth < 1 else None) if
                   isinstance(arg, tuple) else self.name_of.get(("leaf", id(arg())))
                   for arg in inputs]
        return f"{self.module_name[id(module)]}({', '.join(w or '…' for w in written)})"

    def _indexed_name(self, tensor: Any) -> str | None:
        """An unnamed input that is a slice of a named tensor at one index of one dimension
        (``xs[t]`` in a loop, ``x[:, t]`` of a batch-first sequence) as the script would
        index it: ``xs[3]``, ``x[:, 3]``; ``xs[…]`` for another view."""
        base = getattr(tensor, "_base", None)
        name = None if base is None else self.name_of.get(("leaf", id(base)))
        if name is None:
            return None
        offset = tensor.storage_offset() - base.storage_offset()
        shape, stride = tuple(tensor.shape), tuple(tensor.stride())
        if len(shape) == base.dim() and shape[:1] == (1,):  # (a row with nn's batch of one)
            shape, stride = shape[1:], stride[1:]
        for dim in range(base.dim()):
            rest = [d for d in range(base.dim()) if d != dim]
            step = base.stride(dim)
            if shape == tuple(base.shape[d] for d in rest) \
                    and stride == tuple(base.stride(d) for d in rest) \
                    and step > 0 and offset % step == 0 and offset // step < base.shape[dim]:
                return f"{name}[{':, ' * dim}{offset // step}]"
        return f"{name}[…]"

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
            where[self.recording._outputs[call.key].storage] = call.key
        saves: dict[_Call, dict[Any, int]] = {}
        inner_bytes: dict[_Call, int] = {}
        counted: set = set()  # inner tensors already counted (split's ops share their node's)
        for call in calls:
            own = {self.recording._outputs[call.key].storage: call.key}
            for operand in call.operands:
                if operand.key[0] == "leaf":
                    own.setdefault(self.recording._leaves[operand.key[1:]].storage, operand.key)
                elif operand.key[0] == "node":
                    own.setdefault(self.recording._outputs[operand.key].storage, operand.key)
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
            inner_bytes[call] = sum(nbytes for storage, nbytes in inner.items()
                                    if storage not in counted)
            counted.update(inner)
        # A value two calls keep is one tensor: counted with the larger of what they keep.
        largest: dict[Any, int] = {}
        for kept in saves.values():
            for key, nbytes in kept.items():
                largest[key] = max(nbytes, largest.get(key, 0))
        for kept in saves.values():
            for key in kept:
                kept[key] = largest[key]
        return saves, inner_bytes
