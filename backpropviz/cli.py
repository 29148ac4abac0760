"""The command line: ``backpropviz render SCRIPT`` runs a script and draws its graph."""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import json
import math
import os
import runpy
import shutil
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import networkx as nx

from . import __version__
from .animate.render import AnimateError
from .draw import DrawError
from .engine import EngineError, Node, topological_order
from .ir import IRError, to_graphml, to_networkx, to_node_link, validate
from .torch_import import TorchImportError

# The library's own errors: each is one sentence that names the problem.
LIBRARY_ERRORS = (EngineError, IRError, DrawError, AnimateError, TorchImportError)

__all__ = ["DEFAULT_MAX_NODES", "FORMATS", "main"]

DRAW_FORMATS = ("svg", "png", "pdf", "dot")
VIDEO_FORMATS = ("mp4", "gif", "webm", "mov")
FORMATS = (*DRAW_FORMATS, "json", "graphml", "html", *VIDEO_FORMATS)

# The drawing's size limit, counted in IR nodes (values and ops). dot's layout
# time grows faster than linearly with the graph: around this size it still
# answers in seconds (bench/render.py: ~3,900 nodes take 1.6 s of dot, ~10,000
# take 29 s), beyond it a user waits with nothing to show.
DEFAULT_MAX_NODES = 4000

_TORCH_MISSING = "this script uses PyTorch; install it with: pip install 'backpropviz[torch]'"


class CommandError(Exception):
    """A failed command: one line for stderr, and the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors on one line like every other error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CommandError(f"{message} (see '{self.prog} --help')", status=2)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0, 1 for a failed run, 2 for usage)."""
    try:
        args = _parser().parse_args(argv)
        return args.command(args)
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else 0
    except CommandError as error:
        print(f"backpropviz: error: {error}", file=sys.stderr)
        return error.status
    except LIBRARY_ERRORS as error:  # each says what went wrong in one sentence
        print(f"backpropviz: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("backpropviz: interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="backpropviz", description=__doc__.split(": ", 1)[1].strip("."))
    parser.add_argument("--version", action="version", version=f"backpropviz {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    render = commands.add_parser(
        "render", help="run a script and draw the graph it computed",
        description="Run SCRIPT as `python SCRIPT` would, find the graph it computed (its "
                    "outputs, or the ROOTs named), run backward if the script did not, and "
                    "write the picture. The output's extension picks the format.",
        epilog="example: backpropviz render examples/d2l_mlp.py -o d2l_mlp.pdf --rankdir BT")
    render.set_defaults(command=_render)
    render.add_argument("script", metavar="SCRIPT", help="the Python script to run")
    render.add_argument("roots", metavar="ROOT", nargs="*", default=[],
                        help="names of the values to draw from (default: the script's "
                             "outputs, the values nothing else in it consumes)")
    render.add_argument("-o", "--output", metavar="OUT",
                        help="output file ('-' for stdout; default: SCRIPT's name with the "
                             "format's extension, in the current directory)")
    render.add_argument("--format", choices=FORMATS, metavar="F",
                        help=f"output format, instead of OUT's extension: {', '.join(FORMATS)}")
    render.add_argument("--rankdir", choices=("LR", "RL", "TB", "BT"), default="LR",
                        help="direction of the data flow (default LR; BT is the book's "
                             "lower-left to upper-right)")
    render.add_argument("--theme", choices=("light", "dark", "transparent"), default="light",
                        help="colours and background (default light)")
    render.add_argument("--precision", type=_positive(int), default=4, metavar="N",
                        help="significant digits of the numbers shown (default 4)")
    render.add_argument("--steps", metavar="DIR", type=Path,
                        help="also write one SVG per backward step into DIR, numbered so "
                             "they sort (with --steps, the single drawing is written only "
                             "if -o is given)")
    render.add_argument("--no-backward", action="store_true",
                        help="draw the forward pass only: do not run backward and leave "
                             "gradients out")
    render.add_argument("--max-nodes", type=_positive(int), metavar="N",
                        help="refuse graphs with more than N values and ops (default "
                             f"{DEFAULT_MAX_NODES}, for videos the animation's limit, "
                             f"{_video_max_nodes()})")
    video = render.add_argument_group("videos (mp4, gif, webm, mov)")
    video.add_argument("--quality", choices=("l", "m", "h", "k"),
                       help="manim's quality: l 480p15 (default), m 720p30, h 1080p60, k 4K")
    video.add_argument("--phase", choices=("forward", "backward", "both"),
                       help="which passes to animate (default both)")
    video.add_argument("--speed", type=_positive(float), metavar="X",
                       help="playback speed factor (default 1)")
    return parser


def _video_max_nodes() -> int:
    from .animate import MAX_NODES

    return MAX_NODES


def _positive(kind: type) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            number = kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        if not number > 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return number
    return parse


# ---------------------------------------------------------------- render


def _render(args: argparse.Namespace) -> int:
    fmt, output = _destination(args)
    _check_options(args, fmt)
    if args.max_nodes is None:
        args.max_nodes = _video_max_nodes() if fmt in VIDEO_FORMATS else DEFAULT_MAX_NODES
    script = Path(args.script)
    if not script.is_file():
        raise CommandError(f"no such script: {args.script}")
    if output not in (None, "-"):
        _check_writable(output)
    if args.steps is not None:
        _check_writable_dir(args.steps)
    try:
        source = script.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise CommandError(f"cannot read {args.script}: {error.strerror or error}") from None
    to_stdout = output == "-"
    # With -o -, stdout carries the picture, so the script's prints go to stderr.
    quiet = contextlib.redirect_stdout(sys.stderr) if to_stdout else contextlib.nullcontext()
    with quiet:
        G = _graph_of_script(script, source, args)
        if args.no_backward:
            G = _without_gradients(G)
        if args.steps is not None:
            _write_steps(G, args.steps, args)
        if output is not None and fmt in VIDEO_FORMATS:
            data = _render_video(G, fmt, None if to_stdout else output, args)
        elif output is not None:
            data = _render_static(G, fmt, args)
            if not to_stdout:
                _write_atomically(output, data)
    if to_stdout:
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        except BrokenPipeError:
            # The reader left (e.g. `| head`): say nothing more on a closed pipe.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    return 0


def _destination(args: argparse.Namespace) -> tuple[str, Path | str | None]:
    """The format, and where it goes: a path, '-' for stdout, or None (steps only)."""
    if args.output == "-":
        return args.format or "svg", "-"
    if args.output is None:
        fmt = args.format or "svg"
        if args.steps is not None:
            return fmt, None
        return fmt, Path(f"{Path(args.script).stem}.{fmt}")
    path = Path(args.output)
    if path.is_dir():
        raise CommandError(f"cannot write {args.output}: it is a directory")
    if args.format:
        return args.format, path
    extension = path.suffix[1:].lower()
    if not extension:
        raise CommandError(f"cannot tell the format of {args.output!r} without an extension "
                           f"(one of {list(FORMATS)}); name it e.g. {path.name}.svg or pass "
                           "--format", status=2)
    if extension not in FORMATS:
        raise CommandError(f"unknown format: {extension!r} (must be one of {list(FORMATS)})",
                           status=2)
    return extension, path


def _check_options(args: argparse.Namespace, fmt: str) -> None:
    """Usage errors between options, caught before the script runs."""
    video_options = [f"--{name}" for name in ("quality", "phase", "speed")
                     if getattr(args, name) is not None]
    if video_options and fmt not in VIDEO_FORMATS:
        raise CommandError(f"{', '.join(video_options)}: for videos only "
                           f"({', '.join(VIDEO_FORMATS)}), not for {fmt}", status=2)
    if args.no_backward and args.steps is not None:
        raise CommandError("--steps shows the backward pass, which --no-backward leaves out",
                           status=2)
    if args.no_backward and args.phase not in (None, "forward"):
        raise CommandError(f"--phase {args.phase} animates the backward pass, which "
                           "--no-backward leaves out", status=2)
    if fmt in VIDEO_FORMATS:
        # What the video renderer would refuse, refused before the script runs
        # and before --steps writes anything.
        from .animate.render import TRANSPARENT_FORMATS, require_manim

        if args.theme == "transparent" and f".{fmt}" not in TRANSPARENT_FORMATS:
            raise CommandError(f"--theme transparent needs a video format with an alpha "
                               f"channel ({', '.join(TRANSPARENT_FORMATS)}), not .{fmt}",
                               status=2)
        require_manim()


def _check_writable(path: Path) -> None:
    """Fail before running the script, rather than after, when OUT cannot be written."""
    folder = path.parent
    if not folder.is_dir():
        raise CommandError(f"cannot write {path}: no such directory {str(folder)!r}")
    if not os.access(folder, os.W_OK):
        raise CommandError(f"cannot write {path}: permission denied")


def _check_writable_dir(directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise CommandError(f"cannot write steps into {directory}: it is not a directory")
    existing = next((p for p in (directory, *directory.parents) if p.exists()), Path("."))
    if not os.access(existing, os.W_OK):
        raise CommandError(f"cannot write steps into {directory}: permission denied")


# ---------------------------------------------------------------- the script


def _graph_of_script(script: Path, source: str, args: argparse.Namespace) -> nx.MultiDiGraph:
    """Run the script, choose its roots, run backward if needed, and return the IR."""
    with _recording(source) as recording:
        namespace = _run_script(script)
        producer = _Producer(namespace, recording, args.max_nodes)
        roots = producer.named(args.roots) if args.roots else producer.outputs(script)
        producer.check_size(roots)
        if not args.no_backward:
            producer.backward(roots)
        G = producer.graph(roots)
    validate(G)
    return G


@contextlib.contextmanager
def _recording(source: str) -> Iterator[Any]:
    """For a PyTorch script, the importer's recording of its run; else None."""
    # Without torch installed the script runs as it is: one that needs torch
    # fails on its import (and gets the install hint), one that only tries it
    # (try: import torch / except ImportError) goes on with the engine.
    if not _imports_torch(source) or importlib.util.find_spec("torch") is None:
        yield None
        return
    from . import torch_import

    with torch_import.capture() as recording:
        yield recording


def _imports_torch(source: str) -> bool:
    """Whether the script has an import statement for torch (only then is the importer loaded)."""
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
        if any(module.split(".")[0] == "torch" for module in modules):
            return True
    return False


def _run_script(script: Path) -> dict[str, Any]:
    """The script's global names after running it as ``python SCRIPT`` would."""
    path = str(script)
    saved_argv, saved_path, saved_cwd = sys.argv, list(sys.path), os.getcwd()
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.realpath(path)))
    try:
        return runpy.run_path(path, run_name="__main__")
    except SystemExit as done:
        raise CommandError(f"{path} exited (sys.exit({done.code!r})) before its end, "
                           "so there is no graph to draw") from None
    except Exception as error:
        if isinstance(error, ModuleNotFoundError) and error.name == "torch":
            raise CommandError(_TORCH_MISSING) from None
        _print_script_traceback(error, path)
        raise CommandError(f"{path} failed with {type(error).__name__} "
                           "(its traceback is above)") from None
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        os.chdir(saved_cwd)  # OUT is relative to where the command ran


def _print_script_traceback(error: BaseException, path: str) -> None:
    """The traceback python would print: from the script's first frame on."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    # A SyntaxError has no frame in the script; python shows just the error.
    traceback.print_exception(type(error), error, tb, file=sys.stderr)
    sys.stderr.flush()


class _Producer:
    """The script's nodes and how to turn them into the IR: the engine's, or PyTorch's."""

    def __init__(self, namespace: dict[str, Any], recording: Any, max_nodes: int) -> None:
        self.namespace = namespace
        self.recording = recording
        self.max_nodes = max_nodes
        self.torch = False
        self.nodes = self._nodes(lambda obj: isinstance(obj, Node))
        if not self.nodes and recording is not None:
            from .torch_import import is_torch_tensor

            self.torch = True
            self.nodes = self._nodes(is_torch_tensor)
        if not self.nodes:
            raise CommandError("no graph found: the script leaves no Value or Tensor in a "
                               "global name (keep the result at top level, e.g. L = ...)")

    def _nodes(self, is_node: Callable[[Any], bool]) -> dict[str, Any]:
        """The nodes in global names, each under its first name."""
        nodes: dict[str, Any] = {}
        seen: set[int] = set()
        for name, obj in self.namespace.items():
            if not name.startswith("_") and is_node(obj) and id(obj) not in seen:
                seen.add(id(obj))
                nodes[name] = obj
        return nodes

    def named(self, names: Sequence[str]) -> dict[str, Any]:
        """The roots named on the command line, each object once."""
        roots: dict[str, Any] = {}
        for name in names:
            obj = self.namespace.get(name)
            if not any(obj is node for node in self.nodes.values()):
                raise CommandError(f"unknown root {name!r} (the script's values are: "
                                   f"{', '.join(sorted(self.nodes))})")
            if not any(obj is root for root in roots.values()):
                roots[name] = obj
        return roots

    def outputs(self, script: Path) -> dict[str, Any]:
        """The values an op computed and nothing else in the script consumed, if one graph.

        The walk runs on the producer's own graph (engine operands, or autograd's
        ``grad_fn`` chain), which is cheaper than the IR and needs no gradients.
        """
        if self.torch:
            starts = {name: t.grad_fn for name, t in self.nodes.items() if t.grad_fn is not None}

            def inputs(fn: Any) -> list:
                return [f for f, _ in fn.next_functions if f is not None]
        else:
            starts = {name: node for name, node in self.nodes.items() if node.op is not None}

            def inputs(node: Any) -> list:
                return list(node.operands)
        if not starts:
            raise CommandError(f"no graph found: the script's values "
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
            raise CommandError(f"the script leaves outputs in separate graphs: "
                               f"{', '.join(sorted(outputs))}; name the root(s) to draw, e.g. "
                               f"backpropviz render {script} {min(outputs)}")
        return outputs

    def graph(self, roots: dict[str, Any]) -> nx.MultiDiGraph:
        """The IR drawn from ``roots`` (distinct objects); its 'roots' follow their order."""
        if not self.torch:
            return to_networkx(*roots.values(), names=self.namespace)
        from .torch_import import from_torch

        G = from_torch(*roots.values(), names=self.namespace, recording=self.recording)
        self._check_size(G.number_of_nodes())
        return G

    def _check_size(self, nodes: int) -> None:
        if nodes > self.max_nodes:
            raise CommandError(
                f"the graph has {nodes} nodes (values and ops), more than --max-nodes "
                f"{self.max_nodes}; draw fewer: use the Tensor form (one node per matrix, not "
                "per number), name a ROOT nearer the inputs, or raise --max-nodes")

    def backward(self, roots: dict[str, Any]) -> None:
        """Run backward from the roots that have no gradient yet."""
        missing = {name: root for name, root in roots.items() if not self._has_gradient(root)}
        for name, root in missing.items():
            shape = tuple(root.shape)
            if math.prod(shape) != 1:
                raise CommandError(
                    f"root {name!r} has no gradient and shape {shape}, and backward starts "
                    f"from a single number: name a scalar root (the loss), call "
                    f"{name}.backward(gradient) in the script, or pass --no-backward")
        for name, root in missing.items():
            try:
                root.backward()
            except Exception as error:
                raise CommandError(f"backward from {name!r} failed: {error}") from None

    def _has_gradient(self, root: Any) -> bool:
        return self.recording.has_gradient(root) if self.torch else root.has_grad

    def check_size(self, roots: dict[str, Any]) -> None:
        """Refuse an engine graph over the limit before anything runs on it (a torch
        graph's size is known once its IR is built)."""
        if not self.torch:
            order = topological_order(roots.values())
            self._check_size(len(order) + sum(node.op is not None for node in order))


def _without_gradients(G: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """The IR as it stood before any backward pass: values only, no gradients."""
    H = G.copy()
    for _, attrs in H.nodes(data=True):
        if attrs["kind"] == "value":
            attrs["grad"] = None
    for _, _, attrs in H.edges(data=True):
        attrs.pop("grad", None)
    H.graph.update(backward_order=[], seeds={})
    return H


# ---------------------------------------------------------------- outputs


def _render_static(G: nx.MultiDiGraph, fmt: str, args: argparse.Namespace) -> bytes:
    """The picture (or export) as bytes, all in memory."""
    if fmt == "json":
        return (json.dumps(to_node_link(G), indent=1) + "\n").encode()
    if fmt == "graphml":
        return (to_graphml(G) + "\n").encode()
    from .draw import draw

    options = {"rankdir": args.rankdir, "theme": args.theme, "precision": args.precision}
    if fmt == "html":
        from .html import to_html

        return to_html(G, **options).encode()
    diagram = draw(G, forward_only=args.no_backward, **options)
    return diagram.source.encode() if fmt == "dot" else diagram.pipe(fmt)


def _render_video(G: nx.MultiDiGraph, fmt: str, output: Path | None,
                  args: argparse.Namespace) -> bytes | None:
    """Render the clip to ``output`` (it reports what it wrote), or return its bytes."""
    from .animate import render_video

    options = {"quality": args.quality or "l", "speed": args.speed or 1.0,
               "phase": "forward" if args.no_backward else (args.phase or "both"),
               "theme": args.theme, "rankdir": args.rankdir, "precision": args.precision,
               "max_nodes": args.max_nodes, "progress": output is not None}
    if output is not None:
        render_video(G, output, **options)  # atomic: nothing is left there on failure
        return None
    with tempfile.TemporaryDirectory() as folder:
        return render_video(G, Path(folder) / f"clip.{fmt}", **options).read_bytes()


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a temporary file beside it, then a rename."""
    from .draw import write_atomically

    try:
        write_atomically(path, data)
    except OSError as error:
        raise CommandError(f"cannot write {path}: {error.strerror}") from None


def _write_steps(G: nx.MultiDiGraph, directory: Path, args: argparse.Namespace) -> None:
    """One SVG per backward step into ``directory``, moved in only once all are drawn."""
    from .draw import render_steps

    created = not directory.exists()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".steps-", dir=directory))
    except OSError as error:
        raise CommandError(f"cannot write steps into {directory}: {error.strerror}") from None
    try:
        paths = render_steps(G, staging, rankdir=args.rankdir, theme=args.theme,
                             precision=args.precision)
        for path in paths:
            os.replace(path, directory / path.name)
        # Frames of an earlier, longer run would read as steps of this one.
        current = {path.name for path in paths}
        for old in directory.glob("step-[0-9][0-9][0-9].*"):
            if old.name not in current:
                old.unlink()
    except BaseException as error:
        shutil.rmtree(staging, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                directory.rmdir()  # only if still empty: never remove what was there
        if isinstance(error, OSError):
            raise CommandError(f"cannot write steps into {directory}: {error}") from None
        raise
    shutil.rmtree(staging)
