"""PyTorch's recurrent cells written out in torch ops, so that each gate is drawn with its numbers.

``nn.RNN``, ``nn.LSTM``, ``nn.GRU`` and their cells run one fused function
each (``torch.rnn_tanh``, ``torch.lstm``, ``torch.gru_cell``, ...) whose
insides autograd keeps to itself: a whole sequence's steps are one op, and
an LSTM's results come out of several autograd nodes at once, what each sent
back not to be told apart. While a script is recorded, those functions run
as the equations of PyTorch's documentation instead, op by op, inside the
module's group (``--modules`` draws the module as one op). The numbers are
autograd's for these ops; they agree with the fused function's to float
rounding.

The values PyTorch's equations name are named as they name them, with the
time step as an index from 1: an RNN's state h1; a GRU's gates r1, z1, its
candidate n1 and its state h1; an LSTM's gates i1, f1, g1, o1 and its states
c1, h1. A cell called in the script's own loop counts its steps by the state
it is given (a state one of its calls made is the next step's). A stack of
layers adds the layer as a second index (r1_2: step 1 of layer 2); a
bidirectional RNN's reverse direction is left unnamed, its values written as
the expressions they are. A name the script gives a value (``h = cell(x,
h)``) comes first.

A long sequence is not drawn rolled (--roll): every step's state is also one
of the stacked output's, so no step is a block used only by the next; the
figure refused for its size says to close the module, --modules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Names", "written_out"]


class Names:
    """The names the written-out cells gave their values, by the values' keys (``key`` of
    an autograd node and its result's number: the recording's), and the time step each
    was made at."""

    def __init__(self, key: Callable[[Any, int], Any]) -> None:
        self.key = key
        self.labels: dict[Any, str] = {}
        self.leaf_labels: dict[int, str] = {}  # id(a first state the script did not make)
        self._steps: dict[Any, int] = {}
        self._states: dict[Any, Any] = {}  # the states the cells made, by key

    def first(self, state: Any, label: str) -> None:
        """Name the state step 1 starts from (h0) if it is a leaf (zeros, as nn makes it),
        not a value the script computed."""
        if state.grad_fn is None:
            self.leaf_labels.setdefault(id(state), label)

    def name(self, tensor: Any, label: str, step: int) -> None:
        key = self.key(tensor.grad_fn, tensor.output_nr)
        self.labels.setdefault(key, label)
        self._steps.setdefault(key, step)
        if label[0] in "hc":
            self._states.setdefault(key, tensor)

    def unreshaped(self, state: Any) -> Any:
        """The state a cell made, where ``state`` is it with its batch of one taken off
        and put back (squeeze, then unsqueeze: nn's cells on one sample); else ``state``.
        The same numbers, so every step reads the one before as a batch's cell does, and
        --roll finds the loop."""
        node = state.grad_fn
        if node is None or type(node).__name__ != "UnsqueezeBackward0":
            return state
        inner, _ = node.next_functions[0]
        if inner is None or not type(inner).__name__.startswith("SqueezeBackward"):
            return state
        made = self._states.get(self.key(*inner.next_functions[0]))
        return made if made is not None and made.shape == state.shape else state

    def step(self, tensor: Any) -> int:
        """The time step a state was made at (read after ``unreshaped``); 0 for one no
        written-out cell made."""
        if tensor.grad_fn is None:
            return 0
        return self._steps.get(self.key(tensor.grad_fn, tensor.output_nr), 0)


class _Step:
    """The names of one step's values: the letter and the step's index (``r`` -> ``r3``,
    ``r3_2`` in layer 2), or none where the values are left unnamed (``index`` None)."""

    def __init__(self, namer: Names | None, step: int, index: str | None) -> None:
        self.namer, self.step, self.index = namer, step, index

    def __call__(self, letter: str, tensor: Any) -> Any:
        if self.namer is not None and self.index is not None:
            self.namer.name(tensor, letter + self.index, self.step)
        return tensor


def _unnamed() -> _Step:
    return _Step(None, 0, None)


def _linear(x: Any, weight: Any, bias: Any) -> Any:
    import torch.nn.functional as F  # noqa: N812 - PyTorch's own spelling

    return F.linear(x, weight, bias)


def _lstm_step(x_gates: Any, hx: Sequence[Any], w_hh: Any, b_hh: Any, named: _Step,
               w_hr: Any = None) -> tuple[Any, Any]:
    """One LSTM step from the input's share of the gates (x W_ihᵀ + b_ih): gates i, f, g, o;
    c' = f⊙c + i⊙g, h' = o⊙tanh(c') (projected, h' W_hrᵀ, with proj_size)."""
    h, c = hx
    i, f, g, o = (x_gates + _linear(h, w_hh, b_hh)).chunk(4, dim=1)
    kept = named("f", f.sigmoid()) * c  # (in the order of the equation: f⊙c first)
    c_next = named("c", kept + named("i", i.sigmoid()) * named("g", g.tanh()))
    h_next = named("o", o.sigmoid()) * c_next.tanh()
    return named("h", h_next if w_hr is None else _linear(h_next, w_hr, None)), c_next


def _rnn_step(activation: Callable) -> Callable:
    """One step of nn.RNN with ``activation`` (torch.tanh or torch.relu):
    h' = act(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh), from the input's share."""
    def step(x_share: Any, h: Any, w_hh: Any, b_hh: Any, named: _Step) -> Any:
        return named("h", activation(x_share + _linear(h, w_hh, b_hh)))

    return step


def _gru_step(x_gates: Any, h: Any, w_hh: Any, b_hh: Any, named: _Step) -> Any:
    """One GRU step from the input's share of the gates: r, z; n = tanh(x_n + r⊙h_n);
    h' = (1 − z)⊙n + z⊙h."""
    x_r, x_z, x_n = x_gates.chunk(3, dim=1)
    h_r, h_z, h_n = _linear(h, w_hh, b_hh).chunk(3, dim=1)
    r = named("r", (x_r + h_r).sigmoid())
    z = named("z", (x_z + h_z).sigmoid())
    n = named("n", (x_n + r * h_n).tanh())
    return named("h", (1 - z) * n + z * h)


def _cell_step(namer: Names | None, *states: Any) -> _Step:
    """A cell's step: the one after the step that made its state (1 for a state of the
    script's own)."""
    if namer is None:
        return _unnamed()
    step = max(namer.step(state) for state in states) + 1
    if step == 1:
        for letter, state in zip("hc", states, strict=False):
            namer.first(state, f"{letter}0")
    return _Step(namer, step, str(step))


def lstm_cell(x: Any, hx: Sequence[Any], w_ih: Any, w_hh: Any, b_ih: Any = None,
              b_hh: Any = None, *, namer: Names | None = None) -> tuple[Any, Any]:
    """torch.lstm_cell: (h', c')."""
    hx = hx if namer is None else tuple(map(namer.unreshaped, hx))
    return _lstm_step(_linear(x, w_ih, b_ih), hx, w_hh, b_hh, _cell_step(namer, *hx))


def gru_cell(x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None,
             *, namer: Names | None = None) -> Any:
    """torch.gru_cell: h'."""
    h = h if namer is None else namer.unreshaped(h)
    return _gru_step(_linear(x, w_ih, b_ih), h, w_hh, b_hh, _cell_step(namer, h))


def rnn_cell(activation: Callable) -> Callable:
    """torch.rnn_tanh_cell or torch.rnn_relu_cell: h'."""
    def cell(x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None, *,
             namer: Names | None = None) -> Any:
        h = h if namer is None else namer.unreshaped(h)
        return _rnn_step(activation)(_linear(x, w_ih, b_ih), h, w_hh, b_hh,
                                     _cell_step(namer, h))

    return cell


def _layers(step: Callable, states: int, x: Any, hx: Sequence[Any], params: Sequence[Any],
            has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool,
            batch_first: bool, namer: Names | None = None) -> tuple:
    """A stack of recurrent layers over a sequence, as torch.lstm / torch.gru run it: the
    input's share of every step's gates at once, then step after step; each layer's
    outputs (both directions side by side) are the next layer's inputs."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    directions = 2 if bidirectional else 1
    time = 1 if batch_first else 0
    length = x.shape[time]
    finals: list[list[Any]] = [[] for _ in range(states)]
    for layer in range(num_layers):
        if layer and dropout and train:
            x = F.dropout(x, dropout, training=True)
        outputs = []
        for direction in range(directions):
            at = layer * directions + direction
            cell = _Cell(params, at, num_layers, directions, has_biases, hx, namer)
            x_shares = _linear(x, cell.w_ih, cell.b_ih)  # (the whole sequence's x: one value)
            state = _one(cell.first)
            made: dict[int, Any] = {}
            for t in (range(length - 1, -1, -1) if direction else range(length)):
                # (indexed, not select(time, t): drawn as the script would write it)
                at_t = x_shares[:, t] if batch_first else x_shares[t]
                state = step(at_t, state, cell.w_hh, cell.b_hh, cell.named(t), **cell.projected)
                made[t] = state[0] if states > 1 else state
            outputs.append(torch.stack([made[t] for t in range(length)], dim=time))
            for kept, value in zip(finals, state if states > 1 else (state,), strict=True):
                kept.append(value)
        x = outputs[0] if directions == 1 else torch.cat(outputs, dim=2)
    return (x, *(torch.stack(kept) for kept in finals))


def _packed(step: Callable, states: int, data: Any, batch_sizes: Any, hx: Sequence[Any],
            params: Sequence[Any], has_biases: bool, num_layers: int, dropout: float,
            train: bool, bidirectional: bool, namer: Names | None = None) -> tuple:
    """The same on a packed sequence (pack_padded_sequence): its rows time step after
    time step, the first ``batch_sizes[t]`` sequences (longest first) still running at
    step t. A sequence that has ended keeps its last state; going backward in time
    (the reverse direction), a sequence starts from its first state at its own end."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    sizes = [int(size) for size in batch_sizes]
    starts = [sum(sizes[:t]) for t in range(len(sizes))]
    directions = 2 if bidirectional else 1
    finals: list[list[Any]] = [[] for _ in range(states)]
    for layer in range(num_layers):
        if layer and dropout and train:
            data = F.dropout(data, dropout, training=True)
        outputs = []
        for direction in range(directions):
            at = layer * directions + direction
            cell = _Cell(params, at, num_layers, directions, has_biases, hx, namer)
            x_shares = _linear(data, cell.w_ih, cell.b_ih)
            first = cell.first
            state, made = first, {}
            for t in (range(len(sizes) - 1, -1, -1) if direction else range(len(sizes))):
                size, running = sizes[t], len(state[0])
                if direction and t == len(sizes) - 1:
                    state = _rows(state, size)
                elif direction and size > running:  # (sequences whose end this is start)
                    state = tuple(torch.cat([now, start[running:size]])
                                  for now, start in zip(state, first, strict=True))
                new = step(x_shares[starts[t]:starts[t] + size], _one(_rows(state, size)),
                           cell.w_hh, cell.b_hh, cell.named(t), **cell.projected)
                new = new if states > 1 else (new,)
                made[t] = new[0]
                state = new if direction or size == running else tuple(
                    torch.cat([now, before[size:]]) for now, before in zip(new, state,
                                                                           strict=True))
            outputs.append(torch.cat([made[t] for t in range(len(sizes))]))
            for kept, value in zip(finals, state, strict=True):
                kept.append(value)
        data = outputs[0] if directions == 1 else torch.cat(outputs, dim=1)
    return (data, *(torch.stack(kept) for kept in finals))


class _Cell:
    """Layer and direction ``at``'s cell of a stack (``layers`` of ``directions``): its
    weights from the flat list torch.lstm takes (b_ih and b_hh None without biases;
    ``projected`` holds an LSTM's w_hr, with proj_size: a fifth weight a cell, or a
    third), the state its first step starts from (h0, c0: named so going forward), and
    the names of step t's values (``named``; the reverse direction's left unnamed)."""

    def __init__(self, params: Sequence[Any], at: int, layers: int, directions: int,
                 has_biases: bool, hx: Sequence[Any], namer: Names | None) -> None:
        per_cell = len(params) // (layers * directions)
        weights = list(params[at * per_cell:(at + 1) * per_cell])
        self.w_ih, self.w_hh = weights[:2]
        self.b_ih, self.b_hh = weights[2:4] if has_biases else (None, None)
        self.projected = {"w_hr": weights[-1]} if per_cell in (3, 5) else {}
        self.layer = "" if layers == 1 else f"_{at // directions + 1}"
        self.forward, self.namer = at % directions == 0, namer
        self.first = tuple(h[at] for h in hx)
        if namer is not None and self.forward:
            for letter, state in zip("hc", self.first, strict=False):
                namer.first(state, f"{letter}0{self.layer}")

    def named(self, t: int) -> _Step:
        return _Step(self.namer, t + 1, f"{t + 1}{self.layer}" if self.forward else None)


def _rows(state: tuple, size: int) -> tuple:
    """The first ``size`` rows of each of a state's tensors (all of them as they are)."""
    return state if size == len(state[0]) else tuple(part[:size] for part in state)


def _one(state: tuple) -> Any:
    """A state as a step takes it: an LSTM's (h, c), a GRU's or an RNN's h."""
    return state if len(state) > 1 else state[0]


def _run(step: Callable, states: int) -> Callable:
    """torch.lstm, torch.gru or torch.rnn_* written out with ``step``: on a padded
    batch (x, hx, params, ...) -> (output, h_n[, c_n]), or a packed sequence (data,
    batch_sizes, hx, params, ...) -> (output's data, h_n[, c_n])."""
    def run(*args: Any, namer: Names | None = None) -> tuple:
        if _is_packed(args):
            data, batch_sizes, hx, *rest = args
            return _packed(step, states, data, batch_sizes, hx if states > 1 else (hx,),
                           *rest, namer=namer)
        x, hx, *rest = args
        return _layers(step, states, x, hx if states > 1 else (hx,), *rest, namer=namer)

    return run


lstm = _run(_lstm_step, 2)
gru = _run(_gru_step, 1)


def rnn(activation: Callable) -> Callable:
    """torch.rnn_tanh or torch.rnn_relu: (output, h_n)."""
    return _run(_rnn_step(activation), 1)


def _padded(args: tuple) -> bool:
    """Whether torch.lstm / torch.gru was called on a padded batch, or (_is_packed) a
    packed sequence (its batch sizes second, its weights fourth), with the weights of
    every cell (an LSTM's with proj_size: 5 a cell)."""
    if len(args) != 9:
        return False
    packed = _is_packed(args)
    if not packed and not isinstance(args[3], bool):
        return False
    params, has_biases, num_layers = args[3:6] if packed else args[2:5]
    bidirectional = args[8] if packed else args[7]
    cells = num_layers * (2 if bidirectional else 1)
    return any(len(params) == cells * per_cell for per_cell in
               ((4, 5) if has_biases else (2, 3)))


def _is_packed(args: tuple) -> bool:
    import torch

    return isinstance(args[1], torch.Tensor) and not args[1].is_floating_point() \
        and isinstance(args[4], bool)


def written_out(func: Any, args: tuple, kwargs: dict) -> Callable | None:
    """The ops-by-ops version of ``func`` for these arguments, if there is one: called
    with the arguments and ``namer=`` the recording's Names."""
    import torch

    if kwargs:
        return None
    if func is torch.lstm_cell or func is torch.gru_cell:
        return lstm_cell if func is torch.lstm_cell else gru_cell
    if (func is torch.lstm or func is torch.gru) and _padded(args):
        return lstm if func is torch.lstm else gru
    for cell, sequence, activation in ((torch.rnn_tanh_cell, torch.rnn_tanh, torch.tanh),
                                       (torch.rnn_relu_cell, torch.rnn_relu, torch.relu)):
        if func is cell:
            return rnn_cell(activation)
        if func is sequence and _padded(args):
            return rnn(activation)
    return None
