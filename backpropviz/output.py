"""Every output through one call: figures, DOT, IR exports, steps, the page, the clip, memory.

``write(graph, "fig.svg")`` writes what the path's extension (or ``format``)
names and returns the path; ``render`` gives the same bytes without a file;
``write_steps`` one picture per backward step; ``show`` the object a notebook
displays. Each takes an ``Options`` (or its fields as keywords) and a graph:
an IR graph, or the roots of one (a Value, a Tensor, another engine's node).
The command line, the notebook magic and the Sphinx directive only translate
their arguments into these calls.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import networkx as nx

from .errors import DrawError, Note, UsageError
from .files import staged_folder, write_atomically
from .formatting import number_text
from .graphviz import DotTimeoutError, check_layout, dot_time_limit
from .names import value_names
from .options import (
    CLIP,
    CLIP_MAX_NODES,
    DEFAULT_MAX_NODES,
    EXPORT,
    FIGURE,
    KINDS,
    MEMORY_FORMATS,
    PAGE,
    TRAINING_FORMATS,
    Options,
    format_of,
    kind_of,
)
from .rolling import find_loop, rolled
from .schema import validated, validated_once
from .script import GraphTooLargeError, as_graph
from .training import Run
from .views import drawn_graph
from .worked import off_the_rule, out_of_order, wrong_seed

__all__ = ["prepare", "render", "render_memory", "roll", "show", "stdout_for", "to_stdout",
           "write", "write_memory", "write_steps", "write_training"]


def prepare(fmt: str, options: Options, *, steps: bool = False) -> float:
    """What an adapter checks before a script runs: the options against ``fmt`` (and
    --steps; UsageError) and what the output needs installed. Returns the most values
    and ops to draw: ``max_nodes`` if set; none for an export, which is never laid
    out; the clip's own limit for a clip."""
    options.check(fmt, steps=steps)
    kind = kind_of(fmt)
    if kind == CLIP:
        from .animate.formats import require_manim

        require_manim()
    if kind == EXPORT and not steps:
        return math.inf
    if options.max_nodes is not None:
        return options.max_nodes
    return CLIP_MAX_NODES if kind == CLIP else DEFAULT_MAX_NODES


@contextlib.contextmanager
def stdout_for(output: Any) -> Iterator[None]:
    """With -o -, stdout carries the output, so a script's prints go to stderr."""
    with contextlib.redirect_stdout(sys.stderr) if output == "-" else contextlib.nullcontext():
        yield


def to_stdout(data: bytes) -> int:
    """Write ``data`` to stdout (-o -); the exit status: 1 if the reader left first."""
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (e.g. `| head`): say nothing more on a closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


def _options(options: Options | None, changes: Mapping[str, Any]) -> Options:
    options = options or Options()
    return options.replace(**changes) if changes else options


def view(G: nx.MultiDiGraph, options: Options) -> nx.MultiDiGraph:
    """The graph as drawn: groups closed (unless ``expand``), modules, compact runs.

    What the view or the producer simplified, where the picture shows it by
    itself (the graph's ``remarks``), is said as a warning
    (``backpropviz.errors.Note``), not drawn."""
    H = drawn_graph(G, **options.view())
    for remark in H.graph.get("remarks", ()):
        warnings.warn(remark, Note, stacklevel=4)
    # A student's engine, drawn as it computed (unless check's verdict is drawn on it)
    graded = any(attrs.get("expected") is not None or attrs.get("error_start")
                 for _, attrs in G.nodes(data=True))
    wrong_ops, wrong_sums = ([], []) if graded else off_the_rule(G)
    if wrong_ops or wrong_sums:
        symbols = sorted({G.nodes[op]["symbol"] for op in wrong_ops})
        ops_, sums = len(wrong_ops), len(wrong_sums)
        found = ([f"{ops_} op ({symbols[0]}) sends a number its rule does not give" if ops_ == 1
                  else f"{ops_} ops ({', '.join(symbols)}) send numbers their rules do not give"]
                 if ops_ else []) + ([
            "1 gradient is not the sum of its shares" if sums == 1 else
            f"{sums} gradients are not the sums of their shares"] if sums else [])
        warnings.warn(f"this engine's backward pass is not the chain rule: {' and '.join(found)}"
                      "; the picture shows its own numbers, and backpropviz check on the "
                      "script says which gradients are wrong and why", Note, stacklevel=4)
    early = {} if graded else out_of_order(G)
    if early:  # (an engine that sweeps its topological order forwards)
        op, user = next(iter(early.items()))
        names = value_names(G)
        result = next(iter(G.successors(op)))
        warnings.warn(f"this engine's backward pass is not the chain rule: the "
                      f"{G.nodes[op]['symbol']} giving {names[result].text} ran before the "
                      f"{G.nodes[user]['symbol']} that uses {names[result].text}, so it sent "
                      "on a gradient that had not all arrived (backward must visit the ops "
                      "in the reverse of their topological order); the picture shows its own "
                      "numbers, and backpropviz check on the script says which gradients "
                      "are wrong and why", Note, stacklevel=4)
    seed = None if graded else wrong_seed(G)
    if seed is not None:  # (a student's engine that never set it; or backward(gradient=))
        warnings.warn(f"the backward pass started from a gradient of {number_text(seed)} at "
                      f"the root, not 1 (∂L/∂L = 1), and the chain rule multiplies every "
                      f"gradient by it: the picture shows those numbers", Note, stacklevel=4)
    return H


def roll(G: nx.MultiDiGraph, options: Options, fmt: str = "svg") -> nx.MultiDiGraph:
    """``G`` with its loop rolled (rolling.py): with ``roll`` or ``repetition``, or by
    itself (said in a Note) when graphviz could not lay it out unrolled; else ``G``.
    Unless ``fmt`` is DOT text or an export, the graph returned is one dot can lay out
    in time (graphviz.check_layout: DrawError for one it cannot)."""
    asked = options.roll or options.repetition is not None
    laid_out = fmt != "dot" and kind_of(fmt) != EXPORT
    loop = find_loop(G) if asked else None
    if asked and loop is None:
        warnings.warn("--roll: no loop found (a block of the same ops on the same shared "
                      "values, each repetition feeding the next and nothing else: an RNN "
                      "whose every step's state is also used after the loop, as nn.RNN's "
                      "output is, is not one), so it is drawn unrolled",
                      Note, stacklevel=3)
    if loop is None:
        try:
            if laid_out:
                _check_drawn(G, options)
            return G
        except DrawError as refused:
            loop = None if asked else find_loop(G)
            if loop is None and _modules_would_help(G, options):
                raise DrawError(f"{refused}; or draw each PyTorch module as one op, "
                                "--modules") from None
            if loop is None:
                raise
        warnings.warn(f"the graph repeats one block {loop.count} times, too long to lay out "
                      "unrolled: drawn rolled, as with --roll", Note, stacklevel=3)
    repetition = options.repetition
    if repetition is not None and repetition > loop.count:
        raise UsageError(f"--repetition {repetition}: the loop repeats {loop.count} times "
                         f"(1 to {loop.count})")
    H = rolled(G, loop, None if repetition is None else repetition - 1)
    if laid_out:
        _check_drawn(H, options)
    return H


def _modules_would_help(G: nx.MultiDiGraph, options: Options) -> bool:
    """Whether ``G`` has PyTorch modules drawn op by op, which --modules would close."""
    return bool(G.graph.get("module_groups")) and not options.modules and options.depth is None


def _check_drawn(G: nx.MultiDiGraph, options: Options) -> None:
    """check_layout on ``G`` as it is to be drawn: its groups (and modules) closed."""
    check_layout(drawn_graph(G, **options.view()))


def rolled_past_the_limit(refused: GraphTooLargeError, fmt: str,
                          options: Options) -> tuple[nx.MultiDiGraph, Options]:
    """A graph refused for its size (--max-nodes) that is drawn with few enough nodes
    (its modules closed, with --modules), or that repeats one block: it, and the options
    that draw it (rolled, said in a Note); else the refusal, raised again."""
    G = refused.graph
    if G is not None and refused.limit is not None \
            and drawn_graph(G, **options.view()).number_of_nodes() <= refused.limit:
        validated(G)  # (its modules or groups closed, few enough to draw: drawn so)
        return G, options
    loop = find_loop(G) if G is not None else None
    if loop is None and G is not None and _modules_would_help(G, options):
        raise GraphTooLargeError(f"{refused}; or draw each PyTorch module as one op, "
                                 "--modules") from None
    if loop is None:
        raise refused
    validated(G)  # (built, but refused before the builder's caller validated it)
    if not (options.roll or options.repetition is not None):  # (else as asked: unsaid)
        warnings.warn(f"the graph repeats one block {loop.count} times, past --max-nodes "
                      "unrolled: drawn rolled, as with --roll", Note, stacklevel=2)
    return G, options.replace(roll=True)


def write(graph_or_root: Any, path: str | os.PathLike, options: Options | None = None, *,
          format: str | None = None, names: Mapping[str, Any] | None = None,
          **changes: Any) -> Path:
    """Write the output ``path``'s extension (or ``format``) names; return the path.

    The file is written whole or not at all. A clip writes its subtitles
    (``.srt``) beside it.
    """
    options = _options(options, changes)
    fmt = format_of(path, format)
    options.check(fmt)
    G = as_graph(graph_or_root, names)
    with validated_once(G):  # (once: what draws it, and its views, take it as valid)
        if kind_of(fmt) == CLIP:  # the clip writes itself (atomically), subtitles beside it
            return _output(G, fmt, options, path)
        return write_atomically(path, _output(G, fmt, options))


def render(graph_or_root: Any, format: str = "svg", options: Options | None = None, *,
           names: Mapping[str, Any] | None = None, **changes: Any) -> bytes:
    """The output ``format`` names, as bytes (a clip through a temporary file).

    A figure too small to read in its ``fit`` frame is made all the same, with
    a warning (``backpropviz.errors.Note``) that says what helps.
    """
    options = _options(options, changes)
    options.check(format)
    G = as_graph(graph_or_root, names)
    with validated_once(G):
        return _output(G, format, options)


def _output(G: nx.MultiDiGraph, format: str, options: Options,
            clip_path: str | os.PathLike | None = None) -> Any:
    """The output's bytes (options checked already); a clip is written to ``clip_path``
    if given, and its path returned."""
    kind = kind_of(format)
    if kind == EXPORT:
        from .exports import export

        return export(roll(G, options, format) if options.roll or options.repetition
                      else G, format)
    try:
        return _laid_out(G, format, options, clip_path)
    except DotTimeoutError as stopped:
        loop = None if options.roll or options.repetition else find_loop(G)
        if loop is None:
            raise
        raise DotTimeoutError(f"{stopped}; or draw it rolled, --roll (it repeats one block "
                              f"{loop.count} times)") from None


def _laid_out(G: nx.MultiDiGraph, format: str, options: Options,
              clip_path: str | os.PathLike | None) -> Any:
    """``_output``'s drawings, whose layout dot makes."""
    kind = kind_of(format)
    with dot_time_limit(options.timeout):
        G = roll(G, options, format)  # (or refused now rather than after a minute of dot)
        if kind == CLIP:
            from .animate import render_video

            if clip_path is not None:
                return render_video(view(G, options), clip_path, **options.clip())
            with tempfile.TemporaryDirectory() as folder:
                clip = options.replace(progress=False).clip()
                return render_video(view(G, options), Path(folder) / f"clip.{format}",
                                    **clip).read_bytes()
        if kind == PAGE:
            from .html import to_html

            return to_html(view(G, options), source=G, **options.page()).encode("utf-8")
        diagram = _diagram(G, options)
        return diagram.source.encode("utf-8") if format == "dot" else diagram.pipe(format)


def _diagram(G: nx.MultiDiGraph, options: Options) -> Any:
    from .diagram import draw

    diagram = draw(view(G, options), **options.figure())
    _note_fit(G, diagram.fit, options, stacklevel=3)
    return diagram


def _note_fit(G: nx.MultiDiGraph, fit: Any, options: Options, stacklevel: int) -> None:
    """Say (a Note, from the caller ``stacklevel`` up) that a picture fitted to a frame
    is too small to read there, and what helps."""
    advice = None if fit is None else fit.advice_for(compact=options.compact)
    if advice:
        if _modules_would_help(G, options):
            advice += ", or --modules (each PyTorch module as one op)"
        # (an unrolled loop is best drawn as its one block; not a loop inside a module
        # that --modules or --depth draws as one op already)
        closed = options.modules or options.depth is not None
        loop = None if G.graph.get("loop_count") else find_loop(
            drawn_graph(G, **options.view()) if closed else G)
        if loop is not None:
            advice += f", or --roll (it repeats one block {loop.count} times)"
        warnings.warn(advice, Note, stacklevel=stacklevel + 1)


def write_steps(graph_or_root: Any, directory: str | os.PathLike,
                options: Options | None = None, *, format: str = "svg",
                names: Mapping[str, Any] | None = None, **changes: Any) -> list[Path]:
    """``step-000.svg``, ``step-001.svg``… in ``directory``, one per state of the
    backward pass, all with one layout; moved in only once every one is drawn
    (older step files there are replaced). Returns the paths."""
    from .diagram import render_diagrams, step_diagrams

    options = _options(options, changes)
    format = format_of(None, format, KINDS[FIGURE])
    options.check(format, steps=True)
    G = as_graph(graph_or_root, names)
    directory = Path(directory)
    with validated_once(G), dot_time_limit(options.timeout):
        G = roll(G, options)
        with staged_folder(directory, stale="step-[0-9][0-9][0-9].*") as staging:
            diagrams = step_diagrams(view(G, options), **options.figure())
            _note_fit(G, diagrams[0].fit, options, stacklevel=2)
            written = render_diagrams(diagrams, staging, format=format)
    return [directory / path.name for path in written]


def show(graph_or_root: Any, options: Options | None = None, *, format: str = "svg",
         names: Mapping[str, Any] | None = None, **changes: Any) -> Any:
    """What a notebook shows: a Diagram (``format`` a figure's), or the step-through
    Page (``html``), drawn as ``write`` draws it."""
    options = _options(options, changes)
    format = format_of(None, format, (*KINDS[FIGURE], *KINDS[PAGE]))
    options.check(format)
    G = as_graph(graph_or_root, names)
    with validated_once(G), dot_time_limit(options.timeout):
        G = roll(G, options, format)
        if kind_of(format) == PAGE:
            from .html import step_through

            return step_through(view(G, options), **options.page())
        return _diagram(G, options)


def render_memory(graph_or_root: Any, format: str = "svg", options: Options | None = None,
                  *, names: Mapping[str, Any] | None = None, **changes: Any) -> bytes:
    """The memory timeline of the graph (``backpropviz memory``) as bytes: a chart
    (svg, png, pdf), a page with the table of its steps (html) or the timeline (json)."""
    from .memory_chart import memory_output

    options = _options(options, changes)
    format = format_of(None, format, MEMORY_FORMATS)
    G = as_graph(graph_or_root, names)
    with validated_once(G):
        return memory_output(G, format, theme=options.theme, title=None)


def write_memory(graph_or_root: Any, path: str | os.PathLike, options: Options | None = None,
                 *, format: str | None = None, names: Mapping[str, Any] | None = None,
                 **changes: Any) -> Path:
    """Write the memory timeline (``render_memory``) to ``path``; return the path."""
    fmt = format_of(path, format, MEMORY_FORMATS)
    return write_atomically(path, render_memory(graph_or_root, fmt, options, names=names,
                                                **changes))


# The writer of a training run by the kind of its format: (module, function), each
# taking (run, path, options) and returning the path it wrote.
_TRAINING_WRITERS = {
    FIGURE: ("backpropviz.train_figure", "render_training_figure"),
    PAGE: ("backpropviz.train_page", "render_training_page"),
    CLIP: ("backpropviz.animate.training", "render_training_clip"),
}


def write_training(run: Run, path: str | os.PathLike, options: Options | None = None, *,
                   format: str | None = None, **changes: Any) -> Path:
    """Write a training run (``train_record.record_training``) as ``path``'s extension (or
    ``format``) names: its JSON (.json), its figure (.svg .png .pdf), its page (.html) or
    its clip (.mp4); return the path. The file is written whole or not at all."""
    if str(path) == "-":
        raise UsageError("a training run is written to a file, not to stdout: give -o "
                         "train.json (or .svg, .png, .pdf, .html, .mp4)")
    options = _options(options, changes)
    fmt = format_of(path, format, TRAINING_FORMATS, what="a training run")
    kind = kind_of(fmt)
    if kind == EXPORT:
        from .training_json import to_json

        return write_atomically(path, to_json(run).encode("utf-8"))
    module_name, function_name = _TRAINING_WRITERS[kind]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        raise UsageError(f"this backpropviz cannot draw a training run as .{fmt} yet; write "
                         "it as .json") from None
    with dot_time_limit(options.timeout):
        return Path(getattr(module, function_name)(run, path, options))
