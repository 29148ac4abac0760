"""Recording a training loop as it runs: each backward pass kept, with the update after it.

``record_training("train.py", Options(iterations=10))`` runs the script as
``render`` does and, each time one of its backward() calls is over, builds the
IR of that pass while the numbers are still that pass's: values as its forward
pass used them, gradients as backward left them. What the script then did to
each parameter is read from the parameter itself when the next backward() is
over (the value that pass's forward read; backward changes no value) or, after
the last pass, when the script has ended. The Run keeps IRs and plain numbers,
never an engine's objects, so its writers read numbers only. It works alike for
the engine, PyTorch (an optimizer's ``step()``, ``.data`` updates, ``torch.no_grad()``
blocks) and micrograd-style engines, because every producer's IR is built here
as ``render`` builds it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from .builder import Live, leaf_readers, listed_parameters
from .errors import BackpropvizError, UsageError
from .formatting import changed_note
from .options import DEFAULT_ITERATIONS, DEFAULT_MAX_NODES, Options
from .script import ScriptError, ScriptRun, graph_of_namespace, graph_of_script, running
from .training import Iteration, Run, Update

__all__ = ["graph_to_draw", "learning_rate", "record_training"]


def record_training(path: str | os.PathLike, options: Options | None = None, *,
                    roots: Sequence[str] = (), argv: Iterable[str] = (),
                    quiet: bool = False) -> Run:
    """Run the script at ``path`` and return its training run, pass by pass.

    ``options.iterations`` passes are kept (default 10), the first ones, or with
    ``options.every`` = K the passes 0, K, 2K…; ``options.iteration`` = K keeps pass K
    alone. A script whose passes would not fit in ``options.max_nodes`` (default
    DEFAULT_MAX_NODES) values and ops, all kept passes counted, is stopped after its
    first pass, with advice; so is one with a single backward pass, which is no loop.
    Each pass is drawn from what its backward() ran from, so ``roots`` are refused.
    """
    if roots:
        raise UsageError("--iterations and --iteration draw what each backward() ran from: "
                         "leave out ROOT")
    options = options or Options()
    recorder = _Recorder(options, str(path))
    try:
        with running(path, tuple(argv), quiet=quiet, script_timeout=options.script_timeout,
                     on_pass=recorder.pass_over):
            recorder.script_ended()
    except _Stop:
        pass  # said below: what stopped the script
    return recorder.run()


def graph_to_draw(path: str | os.PathLike, roots: Sequence[str], options: Options, *,
                  argv: Iterable[str] = (), quiet: bool = False) -> nx.MultiDiGraph:
    """The IR of the one pass ``render`` draws, validated: pass ``options.iteration`` of
    the script's training loop as recorded (``--iteration K``), else the script's graph,
    from ``roots`` (``script.graph_of_script``, with at most ``options.max_nodes`` nodes)."""
    if options.iteration is not None:
        run = record_training(path, options, roots=roots, argv=argv, quiet=quiet)
        (kept,) = run.iterations
        # Each update after the pass, said as a single pass's picture says it.
        G = kept.graph
        G.graph["notes"] = [*G.graph.get("notes", ()), *(
            changed_note(name, update.before, update.after, options.precision)
            for name, update in kept.parameters.items()
            if not np.array_equal(update.before, update.after))]
        return G
    return graph_of_script(path, roots, backward=not options.forward_only,
                           max_nodes=options.max_nodes or DEFAULT_MAX_NODES, argv=tuple(argv),
                           quiet=quiet, script_timeout=options.script_timeout,
                           fold=not options.keep_sums)


class _Stop(BaseException):
    """Raised into the script to end its run once the recording refused it (a BaseException,
    so that the script's ``except Exception`` lets it through)."""


@dataclass
class _Kept:
    """A kept pass as the recording holds it until the run is made: its IR, its leaves'
    own objects (and how to read their numbers), and those numbers once the script
    went on (``after``)."""

    index: int
    graph: nx.MultiDiGraph
    leaves: dict[str, Live]
    listed: dict[int, str]  # id(leaf) -> its place in a model's parameters()
    after: dict[str, Any] | None = None

    def read_after(self) -> None:
        self.after = {vid: read(leaf) for vid, (leaf, read) in self.leaves.items()}

    def reached(self) -> list[str]:
        """The ids of the leaves backward reached, constants left out: where parameters are."""
        G = self.graph
        return [vid for vid in self.leaves if vid in G and not G._pred[vid]
                and G.nodes[vid]["role"] != "const" and G.nodes[vid]["grad"] is not None]


class _Recorder:
    """Told of each backward() call once it is over (``pass_over``): keeps the passes wanted."""

    def __init__(self, options: Options, where: str) -> None:
        self.only = options.iteration
        self.count = options.iterations or DEFAULT_ITERATIONS
        self.every = options.every or 1
        self.max_nodes = options.max_nodes or DEFAULT_MAX_NODES
        self.fold = not options.keep_sums  # chains of + as one op, as render draws them
        self.where = where
        self.total = 0  # backward passes the script ran
        self.kept: list[_Kept] = []
        self.waiting: _Kept | None = None  # the kept pass whose update is not read yet
        self.error: BackpropvizError | None = None

    def wanted(self, index: int) -> bool:
        if self.only is not None:
            return index == self.only
        return index % self.every == 0 and len(self.kept) < self.count

    def pass_over(self, script: ScriptRun) -> None:
        """A backward() call is over: read the update after the last kept pass, and keep
        this one if it is wanted."""
        if self.error is not None:  # the script caught the stop and went on
            raise _Stop
        index, self.total = self.total, self.total + 1
        if self.waiting is not None:
            self.waiting.read_after()
            self.waiting = None
        if not self.wanted(index):
            return
        try:
            with leaf_readers() as readers:
                G = graph_of_namespace(script.names, called=script.called,
                                       recording=script.recording, max_nodes=self.max_nodes,
                                       fold=self.fold, where=script.path,
                                       source=script.source)
            self._check(G)
        except BackpropvizError as error:
            self.error = error
            raise _Stop from None
        self.waiting = _Kept(index, G, dict(readers), _listed(script.names))
        self.kept.append(self.waiting)

    def _check(self, G: nx.MultiDiGraph) -> None:
        """Refuse a loss that is not one number, and a run too big to keep (estimated
        from its first pass)."""
        root = G.nodes[G.graph["roots"][0]]
        if math.prod(root["shape"]) != 1:
            raise ScriptError(f"--iterations records a loop whose backward() starts from one "
                              f"number (the loss); this one starts from a value of shape "
                              f"{tuple(root['shape'])}")
        nodes = G.number_of_nodes()
        if self.kept or self.only is not None or nodes * self.count <= self.max_nodes:
            return
        fewer = max(1, int(self.max_nodes // nodes))
        raise ScriptError(
            f"keeping {self.count} passes of {nodes} nodes (values and ops) each is "
            f"{nodes * self.count} nodes, more than --max-nodes {self.max_nodes:g}: keep fewer "
            f"(--iterations {fewer}), sample a long loop (--every K), train a smaller model, "
            "or raise --max-nodes")

    def script_ended(self) -> None:
        """The script is over: what it left in the last kept pass's parameters, if that
        pass was its last."""
        if self.waiting is not None:
            self.waiting.read_after()
            self.waiting = None

    def run(self) -> Run:
        """The run recorded; the refusal (ScriptError) if there is none to give."""
        if self.error is not None:
            raise self.error
        if self.total == 0:
            raise ScriptError(f"{self.where} never called backward(), so there is no training "
                              "loop to record (--iterations keeps each backward pass of one)")
        if self.only is not None and not self.kept:
            raise UsageError(f"--iteration {self.only}: the script ran {self.total} backward "
                             f"pass{'es' if self.total > 1 else ''} (0 to {self.total - 1})")
        if self.total == 1 and self.only is None:
            raise ScriptError(f"{self.where} ran backward() once, so there is no training loop "
                              "to record: draw its one pass without --iterations")
        names = _names(self.kept)
        parameters = _parameters(self.kept, names)
        iterations = [Iteration(kept.index, _loss(kept.graph), kept.graph,
                                _updates(kept, names, parameters)) for kept in self.kept]
        return Run(iterations, every=self.every, total=self.total, notes=self._notes())

    def _notes(self) -> list[str]:
        notes = []
        if self.only is None and self.kept[-1].index + self.every < self.total:
            which = "the first ones" if self.every == 1 else \
                f"passes 0, {self.every}, {2 * self.every}…"
            notes.append(f"kept {len(self.kept)} of the script's {self.total} backward "
                         f"passes ({which}): raise --iterations to keep more")
        first = _shape(self.kept[0].graph)
        changed = [kept.index for kept in self.kept if _shape(kept.graph) != first]
        if changed:
            notes.append(f"the graph changes from iteration to iteration (pass {changed[0]}'s "
                         f"differs from pass {self.kept[0].index}'s): each is recorded with "
                         "its own graph")
        return notes


# ---------------------------------------------------------------- the parameters


def _names(kept: list[_Kept]) -> dict[int, str]:
    """The name of each leaf object in the run (by ``id``), so that a parameter keeps its
    name throughout: a label it was given (``Value(2.0, label="w")``); else its place in
    a model's ``parameters()`` (``n.parameters()[2]``: a loop's ``for p in ...`` names
    only the last one); else its name in the IR where that is the pass's only leaf so
    named, or else the id it had in the first pass that used it (after that name)."""
    names: dict[int, str] = {}
    taken: set[str] = set()
    for one in kept:
        labels = [one.graph.nodes[vid]["label"] for vid in one.reached()]
        rank = {leaf: i for i, leaf in enumerate(one.listed)}  # a model's order first
        for vid in sorted(one.reached(), key=lambda vid: rank.get(id(one.leaves[vid][0]),
                                                                 len(rank))):
            leaf = one.leaves[vid][0]
            if id(leaf) in names:
                continue
            label = one.graph.nodes[vid]["label"]
            given = getattr(leaf, "label", None)
            name = given if isinstance(given, str) and given else one.listed.get(id(leaf)) or (
                label if label and labels.count(label) == 1 else
                f"{label} ({vid})" if label else vid)
            while name in taken and name != label:
                name += "'"
            names[id(leaf)] = name
            taken.add(name)
    return names


def _listed(names: dict[str, Any]) -> dict[int, str]:
    """Where each parameter of a model in the script's ``names`` is listed: id -> e.g.
    ``model.parameters()[3]`` (micrograd-style models; a PyTorch module's parameters are
    named by its modules already)."""
    models = {name: obj for name, obj in names.items() if not hasattr(obj, "named_parameters")}
    return {key: place for key, (_, place) in listed_parameters(models).items()}


def _parameters(kept: list[_Kept], names: dict[int, str]) -> set[str]:
    """The names of the parameters: leaves marked so (requires_grad, a model's
    parameters()), or whose value the script changed after some pass."""
    found: set[str] = set()
    for one in kept:
        for vid in one.reached():
            attrs = one.graph.nodes[vid]
            if attrs["role"] == "param" or attrs["data"] != one.after[vid]:
                found.add(names[id(one.leaves[vid][0])])
    return found


def _updates(kept: _Kept, names: dict[int, str], parameters: set[str]) -> dict[str, Update]:
    """Each parameter's update after a kept pass, with the learning rate read off if one
    rate gives every number of every parameter."""
    moves = {}
    for vid in kept.reached():
        name = names[id(kept.leaves[vid][0])]
        if name in parameters:
            attrs = kept.graph.nodes[vid]
            moves[name] = (attrs["data"], attrs["grad"], kept.after[vid])
    rate = learning_rate(moves.values())
    order = list(names.values())  # as the run first met them, in every iteration alike
    return {name: Update(*moves[name], rate) for name in sorted(moves, key=order.index)}


def learning_rate(moves: Iterable[tuple[Any, Any, Any]]) -> float | None:
    """The rate η of plain gradient descent, ``after = before − η·grad``, if one η gives
    every number of ``moves`` (before, gradient, after: floats or nested lists), else None.

    η is read off as ``−(after − before) / grad`` where the gradient is largest, written
    with the fewest digits that give every ``after`` again to within rounding (two units
    in the last place of float32 where all the numbers are float32's, as a torch
    optimizer computes them, else of float64); a number whose gradient is 0 must stay
    as it was. None where nothing moved, or the moves differ (Adam, momentum, decay).
    """
    rows = [np.asarray(part, dtype=np.float64).ravel() for move in moves for part in move]
    if not rows:
        return None
    before, grad, after = (np.concatenate(rows[i::3]) for i in range(3))
    if not (np.isfinite(before).all() and np.isfinite(grad).all()
            and np.isfinite(after).all()):
        return None
    moving = grad != 0
    if not moving.any() or (after[~moving] != before[~moving]).any():
        return None
    with np.errstate(over="ignore"):  # a number past float32's range is no float32
        single = all((part.astype(np.float32) == part).all() for part in (before, grad, after))
    kind = np.float32 if single else np.float64
    scale = np.maximum(np.abs(before), np.abs(after))
    tolerance = 2 * np.spacing(scale.astype(kind)).astype(np.float64)
    largest = int(np.argmax(np.abs(grad)))
    estimate = -(after[largest] - before[largest]) / grad[largest]
    for digits in range(1, 18):
        rate = float(f"{estimate:.{digits}g}")
        if rate != 0 and (np.abs(before - rate * grad - after) <= tolerance).all():
            return rate
    return None


def _loss(G: nx.MultiDiGraph) -> float:
    """The number the pass's backward started from: its first root's value."""
    return float(np.asarray(G.nodes[G.graph["roots"][0]]["data"], dtype=np.float64).ravel()[0])


def _shape(G: nx.MultiDiGraph) -> tuple:
    """What a pass computed, without its numbers: its ops in order, and its values' roles
    and shapes (in any order: a producer may place leaves by when they were last changed)."""
    ops = tuple(attrs["op"] for _, attrs in G.nodes(data=True) if attrs["kind"] == "op")
    values = sorted((attrs["role"], tuple(attrs["shape"])) for _, attrs in G.nodes(data=True)
                    if attrs["kind"] == "value")
    return ops, tuple(values)
