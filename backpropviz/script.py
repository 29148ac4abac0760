"""The script front end: run a user's script as ``python`` would and find the graph it computed.

``graph_of_script("example.py")`` runs the script, picks its roots (the
values nothing else in it consumed, or the names given), runs backward if
the script did not, and returns the IR, validated. The CLI, the manim
scenes, notebooks and the tests all come in here. A script that imports
torch runs under the PyTorch importer's ``capture()``, so its values and
gradients are recorded as they happen.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import importlib.util
import io
import math
import os
import re
import runpy
import signal
import sys
import sysconfig
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import networkx as nx

from .builder import Producer
from .errors import BackpropvizError, DrawError, UsageError
from .ir import fold_chains, name_constants, validate
from .options import DEFAULT_MAX_NODES
from .producers import PRODUCERS
from .source_names import number_names, syntax, without_loop_aliases
from .watch import watching

__all__ = ["DEFAULT_MAX_NODES", "GraphTooLargeError", "ScriptError", "ScriptInterrupted",
           "ScriptRun", "as_graph", "find_roots", "graph_of_namespace", "graph_of_script",
           "imports_torch", "may_use_another_engine", "recording_for", "require_script",
           "run_script", "running", "time_limit", "without_gradients"]


_TORCH_MISSING = "this script uses PyTorch; install it with: pip install 'backpropviz[torch]'"


class ScriptError(BackpropvizError):
    """A script that gives no graph to draw: why, and what to do, in one sentence."""


class GraphTooLargeError(ScriptError):
    """A graph of more nodes than ``max_nodes``; ``graph`` is its IR where it was built
    before it was counted (a PyTorch script's), for a loop in it to be drawn rolled."""

    def __init__(self, message: str, graph: nx.MultiDiGraph | None = None,
                 limit: float | None = None) -> None:
        super().__init__(message)
        self.graph, self.limit = graph, limit


class ScriptInterrupted(KeyboardInterrupt):
    """Ctrl-C while the script ran, with the line it was at: still a KeyboardInterrupt,
    so that it stops whatever called (the command line exits with 130)."""


class _TimeUp(BaseException):
    """Raised in the script when its time is up (not an Exception, so that a script's
    ``except Exception`` does not swallow it)."""


class _HardExit(BaseException):
    """Raised in the script in place of ``os._exit()``, which would end backpropviz too."""


def graph_of_script(path: str | os.PathLike, roots: Sequence[str] = (), *,
                    backward: bool = True, max_nodes: int = DEFAULT_MAX_NODES,
                    argv: Sequence[str] = (), quiet: bool = False,
                    fold: bool = True, script_timeout: float | None = None) -> nx.MultiDiGraph:
    """Run the script at ``path`` and return the IR of its graph.

    ``roots`` names the values to draw from (default: the script's outputs,
    the values an op computed and nothing else consumed). With ``backward``,
    roots without a gradient get ``backward()``; without it, the IR holds the
    forward pass only, even if the script ran backward itself. A graph over
    ``max_nodes`` values and ops is refused before anything runs on it.
    ``argv`` is what the script sees after its name in ``sys.argv``; ``quiet``
    swallows what it prints. With ``fold``, chains of additions whose inner
    sums have no name (``sum(...)``, a neuron's weighted sum) are one op
    (``ir.fold_chains``). A script still running after ``script_timeout`` seconds
    is stopped, with a ScriptError that says where it was.
    """
    with running(path, argv, quiet=quiet, script_timeout=script_timeout) as run:
        return graph_of_namespace(run.names, roots, called=run.called,
                                  recording=run.recording, backward=backward,
                                  max_nodes=max_nodes, fold=fold, where=run.path,
                                  source=run.source, graphs=run.graphs)


@dataclass(frozen=True)
class ScriptRun:
    """A script as ``running`` ran it: its names (its global names, then those of the
    functions that made its last backward() call), that call's roots, the recording, and
    how many graphs its backward() calls ran on (a loop's passes, each on its own)."""

    path: Path
    source: str
    names: dict[str, Any]
    called: tuple
    recording: Any
    graphs: int = 1


@contextlib.contextmanager
def running(path: str | os.PathLike, argv: Sequence[str] = (), *,
            quiet: bool = False, script_timeout: float | None = None,
            on_pass: Callable[[ScriptRun], None] | None = None) -> Iterator[ScriptRun]:
    """Run the script as ``python`` would, watched, for every command that reads one
    (render, check, memory): under the recording its framework needs (PyTorch's
    capture), with every backward() call kept, so that a script whose work is inside
    ``main()`` is read as well as one that works at top level. The recording stays
    open in the block; ``quiet`` swallows what the script prints there too;
    ``script_timeout`` bounds the script's run (``run_script``). ``on_pass`` is told
    of the script as it stands once each backward() is over (a training run's record:
    its names then, that call's roots)."""
    script = Path(path)
    require_script(script)
    try:
        source = script.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise ScriptError(f"cannot read {path}: {error.strerror or error}") from None
    silence = contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext()
    with silence, recording_for(source) as recording:
        def passed(watch: Any) -> None:
            on_pass(ScriptRun(script, source, watch.names(watch.global_names), watch.roots,
                              recording))

        with watching(script, other_engines=may_use_another_engine(source),
                      on_pass=passed if on_pass is not None else None) as watch:
            namespace = run_script(script, argv, script_timeout=script_timeout)
        yield ScriptRun(script, source, watch.names(namespace), watch.roots, recording,
                        watch.graphs)


def graph_of_namespace(namespace: dict[str, Any], roots: Sequence[str] = (), *,
                       called: Sequence[Any] = (), recording: Any = None,
                       backward: bool = True, max_nodes: int = DEFAULT_MAX_NODES,
                       fold: bool = True, where: str | os.PathLike = "SCRIPT",
                       source: str = "", graphs: int = 1) -> nx.MultiDiGraph:
    """The IR of the graph in ``namespace`` (a script's names after it ran, a notebook's
    after a cell), found as ``graph_of_script`` finds it: the ``roots`` named, else
    ``called`` (what backward() last ran from), else the outputs; ``recording`` is
    the PyTorch capture the values were made under, if any. ``where`` names the
    script in advice; ``source`` is its code (names of plain numbers name constants);
    ``graphs``, how many graphs its backward() calls ran on (the figure says it draws the
    last, when others were not drawn)."""
    tree = syntax(source)
    namespace = without_loop_aliases(namespace, tree)
    producer = _Producer(namespace, recording, max_nodes, called, roots)
    # Named roots, else the value backward() was last run from, else the outputs.
    chosen = (producer.named(roots) if roots else producer.called()
              or producer.outputs(Path(where)))
    producer.check_size(chosen)
    if backward:
        producer.backward(chosen)  # (the engine's own code: the collector as it was)
    with _collector_paused():
        try:
            G = producer.graph(chosen)
        except GraphTooLargeError as refused:
            if refused.graph is not None:  # (as it is drawn, for its loop to be drawn rolled)
                refused.graph = _finished(refused.graph, namespace, tree, fold)
            raise
        validate(G)
        G = _finished(G, namespace, tree, fold)
    # (a loop's earlier passes, each on a graph of its own: not the drawn graph's passes,
    # whose roots each gave it a seed)
    earlier = graphs - max(1, len(G.graph.get("seeds", {})))
    if earlier > 0 and any(obj is root for obj in chosen.values() for root in called):
        G.graph["earlier_passes"] = earlier  # (the clip's title card says so too)
        G.graph.setdefault("notes", []).append(
            f"drawn: the script's last backward pass; {earlier} earlier "
            f"{'one' if earlier == 1 else 'ones'} ran on graphs of their own (a loop's "
            f"passes: `backpropviz render {Path(where).name} --iterations` draws each)")
    return G if backward else without_gradients(G)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while the IR is built, on again after (as it was).
    The IR's numbers are nested lists, each a container the collector tracks, and the
    whole graph stays alive until drawn: every collection of the oldest generation
    walked all of it again, for nothing (an RNN unrolled 300 steps: its IR built in
    0.5-0.6 s, not 1.2-1.6). What the build leaves unreachable in cycles is collected
    once the collector is on again. (A backward() the script did not run is run
    before the build, with the collector as it was: that is the engine's code, not
    ours.)"""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _finished(G: nx.MultiDiGraph, namespace: dict[str, Any], tree: Any,
              fold: bool) -> nx.MultiDiGraph:
    """``G`` with its constants named after the script's numbers, its chains of +
    folded (unless not ``fold``)."""
    name_constants(G, number_names(namespace, tree))
    return fold_chains(G) if fold else G


def find_roots(namespace: dict[str, Any], names: Sequence[str] = (),
               script: str | os.PathLike = "SCRIPT", called: Sequence[Any] = (),
               recording: Any = None) -> dict[str, Any]:
    """The roots of a script's graph: those ``names``, else ``called`` (what its last
    backward() ran from), else its outputs, by name; ``recording`` is the PyTorch
    capture its values were made under, if any."""
    producer = _Producer(namespace, recording, DEFAULT_MAX_NODES, called, names)
    return producer.named(names) if names else producer.called() or producer.outputs(
        Path(script))


def run_script(path: str | os.PathLike, argv: Sequence[str] = (), *,
               script_timeout: float | None = None) -> dict[str, Any]:
    """The script's global names after running it as ``python SCRIPT ARGV...`` would.

    Its folder is first on ``sys.path`` while it runs; ``sys.argv``, the path
    and the working directory are restored afterwards. A script that fails
    prints its own traceback, as python would, and raises ScriptError; so does
    one that calls ``os._exit()`` (which would end this process with no word)
    or still runs after ``script_timeout`` seconds, saying where it was. Ctrl-C
    raises ScriptInterrupted, which says where the script was too.
    """
    require_script(Path(path))
    path = str(path)
    saved_argv, saved_path, saved_cwd = sys.argv, list(sys.path), os.getcwd()
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(os.path.realpath(path)))
    try:
        with time_limit(script_timeout, "the script", path):
            return _run_path(path)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        os.chdir(saved_cwd)  # outputs are relative to where the command ran


def _run_path(path: str) -> dict[str, Any]:
    """``run_script``'s run, as python runs a script, its ends made errors of ours."""
    hard_exits: list[int] = []
    try:
        with _os_exit_refused(hard_exits), _termination_said(path):
            namespace = runpy.run_path(path, run_name="__main__")
    except SystemExit as done:
        namespace = _after_exit(done, path)
    except _HardExit:
        pass  # said below
    except KeyboardInterrupt as interrupt:
        at = _user_line(_traceback_lines(interrupt.__traceback__), path)
        raise ScriptInterrupted("interrupted while the script was running"
                                + (f", at {at}" if at else "")) from None
    except Exception as error:
        if isinstance(error, ModuleNotFoundError) and error.name == "torch":
            raise ScriptError(_TORCH_MISSING) from None
        _print_script_traceback(error, path)
        raise ScriptError(f"{path} failed with {type(error).__name__} "
                          f"(its traceback is above){_reflected_advice(error)}") from None
    if hard_exits:  # even if the script caught what stood in for it
        raise ScriptError(f"{path} called os._exit({hard_exits[0]}), which ends the process "
                          "at once, so backpropviz had nothing to draw; let the script end "
                          "normally (or call sys.exit())")
    return namespace


# A number on the left of an operator calls the right-hand value's reflected method.
_REFLECTED = {"+": "__radd__", "-": "__rsub__", "*": "__rmul__", "/": "__rtruediv__",
              "**": "__rpow__", "@": "__rmatmul__"}
_UNSUPPORTED = re.compile(r"unsupported operand type\(s\) for ([-+*/@]+|\*\* or pow\(\)): "
                          r"'(int|float)' and '(\w+)'")


def _reflected_advice(error: Exception) -> str:
    """What a TypeError from ``2 - a`` asks of a hand-written Value class: its
    reflected method (``__rsub__``), which Python calls for a number on the left."""
    found = _UNSUPPORTED.search(str(error)) if isinstance(error, TypeError) else None
    if found is None:
        return ""
    op = "**" if found.group(1).startswith("**") else found.group(1)
    method, cls = _REFLECTED.get(op), found.group(3)
    if method is None:
        return ""
    start = "; sum() starts from 0" if op == "+" else ""
    return (f"; a number on the left of {op} ({found.group(2)} {op} {cls}{start}) calls "
            f"{cls}.{method}, which the class does not define: give it one, as "
            f"micrograd's Value does")


@contextlib.contextmanager
def _os_exit_refused(calls: list[int]) -> Iterator[None]:
    """``os._exit(n)`` while the script runs raises _HardExit (noting ``n`` in ``calls``)
    rather than end this process; a process the script forked exits as asked."""
    real_exit, parent = os._exit, os.getpid()

    def refused(status: int) -> None:
        if os.getpid() != parent:  # e.g. a multiprocessing worker, done
            real_exit(status)
        calls.append(status)
        raise _HardExit

    os._exit = refused
    try:
        yield
    finally:
        os._exit = real_exit


@contextlib.contextmanager
def _termination_said(path: str) -> Iterator[None]:
    """SIGTERM while the script runs (sent by the script itself, or by whoever stops it)
    ends the process as it would, but first says in one line where the script was."""
    if os.name != "posix" or threading.current_thread() is not threading.main_thread():
        yield
        return
    parent = os.getpid()

    def on_term(signum: int, frame: FrameType | None) -> None:
        if os.getpid() == parent:  # not a worker the script forked, stopped by its pool
            at = _user_line(_stack_lines(frame), path)
            print(f"backpropviz: error: the script was stopped by {signal.Signals(signum).name}"
                  + (f" at {at}" if at else "") + ", so there is nothing to draw",
                  file=sys.stderr, flush=True)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    previous = signal.signal(signal.SIGTERM, on_term)
    _SAYING.append(on_term)
    try:
        yield
    finally:
        _SAYING.remove(on_term)
        _put_back(signal.SIGTERM, previous)


# A process the script forks is forked with SIGTERM's default action, not the handler
# above. A Python handler only notes a signal, to run between two steps of Python, and
# a child drops what it noted before it has set itself up after the fork: a pool's
# worker stopped that early (a busy machine starts it late, and the pool, its work done
# by the other workers, stops it at once) lived on, and the script waited for it
# forever. The parent takes its handler back once the fork is done.
_SAYING: list[Callable[..., None]] = []  # the handler of the script running, if any
_SET_ASIDE: list[Callable[..., None]] = []  # that handler, while a fork is under way


def _default_while_forking() -> None:
    if _SAYING and signal.getsignal(signal.SIGTERM) is _SAYING[-1]:
        with contextlib.suppress(ValueError):  # (a fork from a thread of the script's)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _SET_ASIDE.append(_SAYING[-1])


def _handler_after_forking() -> None:
    if _SET_ASIDE:
        signal.signal(signal.SIGTERM, _SET_ASIDE.pop())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_default_while_forking, after_in_parent=_handler_after_forking,
                        after_in_child=_SET_ASIDE.clear)


def _put_back(signum: int, handler: Any) -> None:
    """Restore a signal's handler (None: one not set from Python, the default then)."""
    signal.signal(signum, signal.SIG_DFL if handler is None else handler)


NO_LIMIT = 1e9  # seconds (31 years): a longer limit is none (the timer holds no 1e300)


@contextlib.contextmanager
def time_limit(seconds: float | None, what: str = "the script",
               script: str | os.PathLike | None = None) -> Iterator[None]:
    """Stop the code run in the block (``what`` it is, for the message: a script at
    ``script``, a notebook cell) once it has run ``seconds``: ScriptError, saying the
    line it was at. None (or more than a timer holds, ``NO_LIMIT``): no limit.

    SIGALRM stops it, in pure Python and in a C call that waits (``time.sleep``, a
    blocking read) alike, so it needs the main thread of a POSIX process (UsageError
    elsewhere). Should the code catch the stop and go on, it is stopped again each
    second.
    """
    if seconds is not None and not (isinstance(seconds, int | float) and seconds > 0):
        raise UsageError(f"script_timeout must be a positive number of seconds, got {seconds!r}")
    if seconds is None or seconds > NO_LIMIT:
        yield
        return
    stopped: list[str | None] = []  # where the code was, once stopped

    def stop_at(frame: FrameType | None) -> bool:
        """Note where the code was; whether to stop it there: the first time, and again
        where it runs code of the user's (which caught the stop and went on), not in a
        library's (printing the traceback of the stop, say)."""
        lines = _stack_lines(frame)
        if not stopped:
            stopped.append(_user_line(lines, script))
            return True
        return _user_line(lines[-1:], script) is not None

    if not hasattr(signal, "setitimer") or \
            threading.current_thread() is not threading.main_thread():
        raise UsageError("script_timeout needs the main thread of a POSIX process (it stops "
                         "the script with SIGALRM): run the script from there, or without it")

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        if stop_at(frame):
            raise _TimeUp(f"{what} ran longer than {seconds:g} s (--script-timeout)")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    except _TimeUp:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _put_back(signal.SIGALRM, previous)
    if stopped:
        at = stopped[0]
        raise ScriptError(f"{what} ran longer than {seconds:g} s (--script-timeout)"
                          + (f"; it was at {at}" if at else "")) from None


@functools.cache
def _not_users() -> tuple[str, ...]:
    """Where python's own modules, the installed packages and ours live: not the user's
    code."""
    folders = [sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib",
                                                     "platlib")]
    folders.append(os.path.dirname(os.path.realpath(__file__)))
    return tuple({os.path.realpath(folder) + os.sep for folder in folders if folder})


def _user_line(lines: Sequence[tuple[str, int, str]], script: str | os.PathLike | None
               ) -> str | None:
    """``train.py:14 (in train_step)``: the innermost of ``lines`` (file, line, function;
    outermost first) in the user's code (the script, else any file that is neither
    python's nor an installed package's nor ours), the script named as it was given."""
    mine = os.path.realpath(script) if script is not None else None
    for filename, line, function in reversed(lines):
        real = os.path.realpath(filename)
        if filename.startswith("<"):  # a notebook cell, code given as a string; not python's
            if filename.startswith("<frozen "):
                continue
            shown = filename
        elif real == mine:
            shown = str(script)
        elif real.startswith(_not_users()):
            continue
        else:
            shown = os.path.relpath(real) if real.startswith(os.getcwd() + os.sep) else real
        return f"{shown}:{line}" + (f" (in {function})" if function != "<module>" else "")
    return None


def _stack_lines(frame: FrameType | None) -> list[tuple[str, int, str]]:
    """The stack of ``frame``, outermost first, as (file, line, function)."""
    lines = []
    while frame is not None:
        lines.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    return lines[::-1]


def _traceback_lines(tb: TracebackType | None) -> list[tuple[str, int, str]]:
    """A traceback's frames, outermost first, as (file, line, function)."""
    lines = []
    while tb is not None:
        lines.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    return lines


def require_script(script: Path) -> None:
    """ScriptError unless ``script`` is a file (a directory is called one)."""
    if script.is_dir():
        raise ScriptError(f"{script} is a directory, not a script: name a .py file in it")
    if not script.is_file():
        raise ScriptError(f"no such script: {script}")
    if script.suffix.lower() in (".json", ".graphml"):  # (python would read it as code)
        raise ScriptError(f"{script} is a saved graph, not a script: the command runs a "
                          "Python script; draw a saved graph in Python "
                          "(backpropviz.ir.from_node_link or from_graphml, then draw)")


def _after_exit(done: SystemExit, path: str) -> dict[str, Any]:
    """The script's global names after ``sys.exit(0)`` (or ``sys.exit()``): a clean
    exit, as for python; any other status is the script's failure."""
    if done.code is None or done.code == 0:
        tb = done.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code.co_name == "<module>" and code.co_filename == path:
                return dict(tb.tb_frame.f_globals)
            tb = tb.tb_next
    status = done.code if isinstance(done.code, int) else 1
    if not isinstance(done.code, int):
        print(done.code, file=sys.stderr)  # python prints sys.exit("message")'s message
    raise ScriptError(f"{path} exited with status {status}, so there is no graph to "
                      "draw") from None


def without_gradients(G: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """The IR as it stood before any backward pass: values only, no gradients."""
    H = G.copy()
    for _, attrs in H.nodes(data=True):
        if attrs["kind"] == "value":
            attrs["grad"] = None
    for _, _, attrs in H.edges(data=True):
        attrs.pop("grad", None)
    H.graph.update(backward_order=[], seeds={})
    return H


@contextlib.contextmanager
def recording_for(source: str, imported: Iterable[str] = ()) -> Iterator[Any]:
    """The recording of the run of ``source`` by the producer that records the package it
    imports, or that is among the packages ``imported`` already (a notebook's earlier
    cells): PyTorch's capture for a torch script; else None."""
    imported = set(imported)
    # Without the package installed the script runs as it is: one that needs torch
    # fails on its import (and gets the install hint), one that only tries it
    # (try: import torch / except ImportError) goes on with the engine.
    for producer in PRODUCERS:
        if (producer.package
                and (producer.package in imported or _imports(source, producer.package))
                and importlib.util.find_spec(producer.package) is not None):
            recorder = producer.record()
            if recorder is not None:
                with recorder as recording:
                    yield recording
                return
    yield None


def may_use_another_engine(source: str) -> bool:
    """Whether code may build a micrograd-style graph: it imports none of the producers'
    packages (backpropviz, torch; only then is another engine's backward() watched,
    which slows the run)."""
    return not any(_imports(source, producer.package) for producer in PRODUCERS
                   if producer.package)


def imports_torch(source: str) -> bool:
    """Whether the script's source imports torch."""
    return _imports(source, "torch")


def _imports(source: str, package: str) -> bool:
    """Whether the script has an import statement for ``package`` (e.g. only then is the
    torch importer loaded)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False  # the run reports it, as python would
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules = [node.module or ""]
        else:
            continue
        if any(module.split(".")[0] == package for module in modules):
            return True
    return False


def _own_function(namespace: dict[str, Any]) -> str | None:
    """The name of a function the script defines (``main`` first), if it has one."""
    path = namespace.get("__file__")
    mine = [name for name, obj in namespace.items()
            if not name.startswith("_") and getattr(obj, "__code__", None) is not None
            and obj.__code__.co_filename == path]
    return "main" if "main" in mine else (mine[0] if mine else None)


def _print_script_traceback(error: BaseException, path: str) -> None:
    """The traceback python would print: from the script's first frame on."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    # A SyntaxError has no frame in the script; python shows just the error.
    traceback.print_exception(type(error), error, tb, file=sys.stderr)
    sys.stderr.flush()


class _Producer:
    """The script's nodes, of the first producer (producers.PRODUCERS) that has some, and
    how that producer turns them into the IR."""

    def __init__(self, namespace: dict[str, Any], recording: Any, max_nodes: int,
                 called: Sequence[Any] = (), roots: Sequence[str] = ()) -> None:
        self.namespace = namespace
        self.recording = recording
        self.max_nodes = max_nodes
        self.called_roots = tuple(called)  # what the script's last backward() ran from
        self.backward_wanted = False
        self.size_checked = False
        # The producer of the roots named, or of what backward() last ran from, first
        # (a notebook's names hold every earlier cell's values, of any engine); then
        # the registry's order.
        wanted = [*(namespace[name] for name in roots if name in namespace),
                  *self.called_roots]
        ordered = sorted(PRODUCERS, key=lambda producer: not any(
            producer.claims(root, recording=recording) for root in wanted))
        for producer in ordered:
            self.producer: Producer = producer
            self.nodes = self._nodes(functools.partial(producer.claims, recording=recording))
            if self.nodes:
                return
        near = next((miss for obj in namespace.values() for producer in PRODUCERS
                     for miss in [producer.near_miss(obj)] if miss), None)
        if near:
            raise ScriptError(f"no graph found: {near}")
        function = _own_function(namespace)
        if function:
            raise ScriptError(
                "no graph found: the script keeps its values inside a function; return the "
                f"result and keep it in a global name, e.g. L = {function}()")
        raise ScriptError("no graph found: the script leaves no Value or Tensor in a "
                          "global name (keep the result at top level, e.g. L = ...)")

    def _nodes(self, is_node: Callable[[Any], bool]) -> dict[str, Any]:
        """The nodes in the script's names, each under its first name; then the roots of
        its last backward() that have no name, under the name of that call."""
        nodes: dict[str, Any] = {}
        seen: set[int] = set()
        for name, obj in self.namespace.items():
            if not name.startswith("_") and is_node(obj) and id(obj) not in seen:
                seen.add(id(obj))
                nodes[name] = obj
        for root in self.called_roots:
            if is_node(root) and id(root) not in seen:
                seen.add(id(root))
                nodes[f"<root of backward() #{len(seen)}>"] = root
        return nodes

    def called(self) -> dict[str, Any]:
        """The roots of the script's last backward() call, under their names (if they are
        of the kind drawn)."""
        return {name: obj for name, obj in self.nodes.items()
                if any(obj is root for root in self.called_roots)}

    def named(self, names: Sequence[str]) -> dict[str, Any]:
        """The roots named by the caller, each object once."""
        roots: dict[str, Any] = {}
        for name in names:
            obj = self.namespace.get(name)
            if not any(obj is node for node in self.nodes.values()):
                named = sorted(name for name in self.nodes if not name.startswith("<"))
                raise ScriptError(f"unknown root {name!r} (the script's values are: "
                                  f"{', '.join(named)})")
            if not any(obj is root for root in roots.values()):
                roots[name] = obj
        return roots

    def outputs(self, script: Path) -> dict[str, Any]:
        """The values an op computed and nothing else in the script consumed, if one graph.

        The walk runs on the producer's own graph (engine operands, or autograd's
        ``grad_fn`` chain), which is cheaper than the IR and needs no gradients.
        """
        starts, inputs = self.producer.walk(self.nodes)
        if not starts:
            raise ScriptError(f"no graph found: the script's values "
                              f"({', '.join(sorted(self.nodes))}) were not combined by "
                              "any operation")
        consumed: set = set()
        reached_by: dict[Any, str] = {}  # graph node -> the first output whose walk met it
        group = {name: name for name in starts}  # union-find: outputs sharing a graph

        def leader(name: str) -> str:
            while group[name] != name:
                name = group[name]
            return name

        for name, start in starts.items():
            stack = [start]
            while stack:
                node = stack.pop()
                if node in reached_by:
                    group[leader(reached_by[node])] = leader(name)
                    continue
                reached_by[node] = name
                for operand in inputs(node):
                    consumed.add(operand)
                    stack.append(operand)
        outputs = {name: self.nodes[name] for name, start in starts.items()
                   if start not in consumed}
        if len({leader(name) for name in outputs}) > 1:
            raise ScriptError(f"the script leaves outputs in separate graphs: "
                              f"{', '.join(sorted(outputs))}; name the root(s) to draw, e.g. "
                              f"backpropviz render {script} {min(outputs)}")
        return outputs

    def graph(self, roots: dict[str, Any]) -> nx.MultiDiGraph:
        """The IR drawn from ``roots`` (distinct objects); its 'roots' follow their order."""
        G = self.producer.build(list(roots.values()), self.namespace, self.recording,
                                self.backward_wanted)
        if not self.size_checked:  # its producer knows its size now, not before
            self._check_size(G.number_of_nodes(), G)
        return G

    def _check_size(self, nodes: int, G: nx.MultiDiGraph | None = None) -> None:
        if nodes > self.max_nodes:
            raise GraphTooLargeError(
                f"the graph has {nodes} nodes (values and ops), more than --max-nodes "
                f"{self.max_nodes}; draw fewer: {self.producer.fewer}name a ROOT nearer the "
                "inputs, or raise --max-nodes", G, self.max_nodes)

    def backward(self, roots: dict[str, Any]) -> None:
        """Run backward from the roots that have no gradient yet (another engine's
        backward runs when its graph is read, watched)."""
        self.backward_wanted = True
        if self.producer.reads_backward:
            return
        missing = {name: root for name, root in roots.items()
                   if not self.producer.has_gradient(root, self.recording)}
        for name, root in missing.items():
            shape = tuple(root.shape)
            if math.prod(shape) != 1:
                raise ScriptError(
                    f"root {name!r} has no gradient and shape {shape}, and backward starts "
                    f"from a single number: name a scalar root (the loss), call "
                    f"{name}.backward(gradient) in the script, or pass --no-backward")
        for name, root in missing.items():
            try:
                root.backward()
            except Exception as error:
                raise ScriptError(f"backward from {name!r} failed: {error}") from None

    def check_size(self, roots: dict[str, Any]) -> None:
        """Refuse a graph over the limit before anything runs on it, where its producer
        knows its size before building it (the engine's)."""
        size = self.producer.size(roots.values())
        if size is not None:
            self._check_size(size)
            self.size_checked = True


def as_graph(graph_or_root: Any, names: Mapping[str, Any] | None = None) -> nx.MultiDiGraph:
    """An IR graph as it is, or the IR of a root (a Value or Tensor, a node of an engine
    like micrograd's) or a list of roots, by the producer whose values they are (with its
    chains of additions folded, as the command line draws it)."""
    if isinstance(graph_or_root, nx.MultiDiGraph):
        return graph_or_root
    roots = graph_or_root if isinstance(graph_or_root, Sequence) else [graph_or_root]
    for producer in PRODUCERS:
        if roots and all(producer.claims(root, None) for root in roots):
            return fold_chains(producer.build(list(roots), names, None, backward=True))
    raise DrawError(f"draw needs an IR graph, a Value or Tensor (or a node of an engine "
                    f"like micrograd's: .data, .grad and children), or a list of them, got "
                    f"{type(graph_or_root).__name__}")
