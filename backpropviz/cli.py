"""The command line: ``backpropviz render SCRIPT`` runs a script and draws its graph."""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import networkx as nx

from . import __version__
from .errors import BackpropvizError
from .files import make_folder, staged_folder, write_atomically
from .graphviz import DEFAULT_DOT_TIMEOUT, check_layout, dot_time_limit, require_dot
from .script import DEFAULT_MAX_NODES, graph_of_script, imports_torch, require_script

__all__ = ["DEFAULT_MAX_NODES", "FORMATS", "main"]

DRAW_FORMATS = ("svg", "png", "pdf", "dot")
VIDEO_FORMATS = ("mp4", "gif", "webm", "mov")
EXPORT_FORMATS = ("json", "graphml")
FORMATS = (*DRAW_FORMATS, *EXPORT_FORMATS, "html", *VIDEO_FORMATS)
THEME_NAMES = ("light", "dark", "transparent", "transparent-dark")
CHECK_FORMATS = (*DRAW_FORMATS, "html")
MEMORY_FORMATS = ("svg", "png", "pdf", "html", "json")

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
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first `--` is the script's own sys.argv[1:].
    script_args = argv[argv.index("--") + 1:] if "--" in argv else []
    try:
        args = build_parser().parse_args(argv[:len(argv) - len(script_args) - bool(script_args)]
                                    if "--" in argv else argv)
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else 0
    except CommandError as error:
        print(f"backpropviz: error: {error}", file=sys.stderr)
        return error.status
    args.script_args = script_args
    return _guarded(lambda: args.command(args))


def _guarded(command: Callable[[], int]) -> int:
    """Run a command; its errors become one line on stderr and an exit status."""
    try:
        return command()
    except CommandError as error:
        print(f"backpropviz: error: {error}", file=sys.stderr)
        return error.status
    except BackpropvizError as error:  # each says what went wrong in one sentence
        print(f"backpropviz: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("backpropviz: interrupted", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command and option (the docs' CLI reference is made from it)."""
    parser = _Parser(prog="backpropviz",
                     description=__doc__.split(": ", 1)[1].strip(".").replace("``", ""))
    parser.add_argument("--version", action="version", version=f"backpropviz {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True,
                                     help="one of these ('backpropviz COMMAND --help' for "
                                          "its options):")
    render = commands.add_parser(
        "render", help="run a script and draw the graph it computed",
        description="Run SCRIPT as 'python SCRIPT' would, find the graph it computed (its "
                    "outputs, or the ROOTs named), run backward if the script did not, and "
                    "write the picture. The output's extension picks the format.",
        epilog="example: backpropviz render examples/d2l_mlp.py -o d2l_mlp.pdf --rankdir BT; "
               "arguments after -- go to the script: backpropviz render train.py -- --lr 0.1")
    render.set_defaults(command=_render)
    render.add_argument("script", metavar="SCRIPT",
                        help="the Python script to run (what follows -- is its sys.argv[1:]); "
                             "several scripts (a.py b.py ...) are drawn in one call, each "
                             "into OUT as a folder")
    render.add_argument("roots", metavar="ROOT", nargs="*", default=[],
                        help="names of the values to draw from (default: the value the "
                             "script's last backward() ran from, else its outputs, the values "
                             "nothing else in it consumes)")
    render.add_argument("-o", "--output", metavar="OUT",
                        help="output file ('-' for stdout), or a folder (out/) for the "
                             "picture named after SCRIPT (default: SCRIPT's name with the "
                             "format's extension, in the current directory)")
    render.add_argument("--format", choices=FORMATS, metavar="F",
                        help=f"output format, instead of OUT's extension: {', '.join(FORMATS)}")
    render.add_argument("--rankdir", choices=("LR", "RL", "TB", "BT", "book"),
                        help="direction of the data flow (default LR, or with --fit the one "
                             "that fills the frame best); book: as the book draws it, from "
                             "the inputs at the lower left up to the output at the upper right")
    render.add_argument("--fit", metavar="WxH", type=_frame,
                        help="lay the figure out to fill a frame of W by H pixels, e.g. "
                             "1920x1080 for a slide: direction and folding into rows "
                             "chosen, the picture sized to it (SVG, PNG, PDF, --steps)")
    render.add_argument("--expand", action="store_true",
                        help="draw each group (backpropviz.group) opened, its ops in a box, "
                             "rather than as one operator")
    render.add_argument("--modules", action="store_true",
                        help="draw a PyTorch model at module level: each innermost module "
                             "(model.0, model.1...) as one operator")
    render.add_argument("--compact", action="store_true",
                        help="only named values as boxes: each run of ops whose results "
                             "have no name drawn as one operator, labelled with what it "
                             "computes")
    render.add_argument("--symbolic", action="store_true",
                        help="names only, no numbers, as the book draws its figures")
    render.add_argument("--show-constants", action="store_true",
                        help="draw the gradients and saved marks of constants (the 2 in "
                             "L / 2) too")
    _add_theme(render)
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
                        help="refuse to draw graphs with more than N values and ops "
                             f"(default {DEFAULT_MAX_NODES}, for videos the animation's "
                             f"limit, {_video_max_nodes()}; .json and .graphml exports "
                             "have no limit)")
    render.add_argument("-j", "--jobs", type=_positive(int), metavar="N",
                        help="with several scripts, how many run at once (default: the "
                             "number of cores)")
    render.add_argument("--timeout", type=_positive(float), metavar="S",
                        default=DEFAULT_DOT_TIMEOUT,
                        help="stop graphviz's layout after S seconds and say what to draw "
                             f"instead (default {DEFAULT_DOT_TIMEOUT:g})")
    video = render.add_argument_group("videos (mp4, gif, webm, mov)")
    video.add_argument("--quality", choices=("l", "m", "h", "k"),
                       help="manim's quality: l 480p15 (default), m 720p30, h 1080p60, k 4K")
    video.add_argument("--phase", choices=("forward", "backward", "both"),
                       help="which passes to animate (default both)")
    video.add_argument("--speed", type=_positive(float), metavar="X",
                       help="playback speed factor (default 1)")
    check = commands.add_parser(
        "check", help="grade a hand-written engine's gradients against the reference",
        description="Run SCRIPT, take the graph its engine built (a micrograd-style Value "
                    "class, micrograd itself, or backpropviz's), compute the same in the "
                    "reference engine and compare every gradient. Exit 0 when all match; "
                    "1, with the wrong values, where the error starts and its likely "
                    "cause, when some do not; 2 when the script cannot be checked.",
        epilog="example: backpropviz check student.py -o report.svg")
    check.set_defaults(command=_check)
    check.add_argument("script", metavar="SCRIPT", help="the Python script to run")
    check.add_argument("roots", metavar="ROOT", nargs="*", default=[],
                       help="the output to check (default: the script's output)")
    check.add_argument("-o", "--output", metavar="OUT",
                       help="also draw the graph with the wrong gradients marked "
                            f"({', '.join(CHECK_FORMATS)})")
    check.add_argument("--rankdir", choices=("LR", "RL", "TB", "BT"), default="LR",
                       help="direction of the data flow (default LR)")
    _add_theme(check)
    memory = commands.add_parser(
        "memory", help="chart the bytes the forward pass keeps for the backward pass",
        description="Run SCRIPT, find its graph as render does, and chart the bytes held for "
                    "backward after each forward op (the values each backward rule reads, "
                    "each counted once; for PyTorch, the tensors autograd saved) and after "
                    "each backward step (a value is freed once the last rule reading it has "
                    "run), with the peak and the values that make it up.",
        epilog="example: backpropviz memory examples/d2l_mlp.py -o memory.png")
    memory.set_defaults(command=_memory)
    memory.add_argument("script", metavar="SCRIPT", help="the Python script to run")
    memory.add_argument("roots", metavar="ROOT", nargs="*", default=[],
                        help="names of the values to chart from (default: the script's outputs)")
    memory.add_argument("-o", "--output", metavar="OUT",
                        help="output file: .svg .png .pdf (the chart), .html (the chart in a "
                             "page, with a table of the steps) or .json (the timeline); '-' "
                             "for stdout; default SCRIPT's name + '_memory.svg'")
    memory.add_argument("--format", choices=MEMORY_FORMATS, metavar="F",
                        help=f"output format, instead of OUT's extension: "
                             f"{', '.join(MEMORY_FORMATS)}")
    _add_theme(memory)
    memory.add_argument("--max-nodes", type=_positive(int), metavar="N",
                        default=DEFAULT_MAX_NODES,
                        help=f"refuse graphs with more than N values and ops (default "
                             f"{DEFAULT_MAX_NODES})")
    return parser


def _add_theme(command: argparse.ArgumentParser) -> None:
    command.add_argument("--theme", choices=THEME_NAMES, default="light",
                         help="colours and background (default light; transparent and "
                              "transparent-dark for light and dark slides)")


def _video_max_nodes() -> int:
    from .animate import MAX_NODES

    return MAX_NODES


def _frame(text: str) -> tuple[int, int]:
    from .errors import DrawError
    from .fitting import parse_frame

    try:
        return parse_frame(text)
    except DrawError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


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
    positionals = [args.script, *args.roots]
    if len(positionals) > 1 and all(name.endswith(".py") for name in positionals):
        return _render_many(positionals, args)
    if args.output not in (None, "-") and _is_folder(args.output):
        args.output = str(Path(args.output) / f"{Path(args.script).stem}.{args.format or 'svg'}")
    fmt, output = _destination(args)
    _check_options(args, fmt)
    if fmt in EXPORT_FORMATS and args.steps is None:
        args.max_nodes = math.inf  # the limit is dot's: an export is never laid out
    elif args.max_nodes is None:
        args.max_nodes = _video_max_nodes() if fmt in VIDEO_FORMATS else DEFAULT_MAX_NODES
    require_script(Path(args.script))
    if _needs_dot(args, fmt):
        require_dot()  # before the script runs, not after
    if output not in (None, "-"):
        _check_writable(output)
    if args.steps is not None:
        _check_writable_dir(args.steps)
    to_stdout = output == "-"
    # With -o -, stdout carries the picture, so the script's prints go to stderr.
    quiet = contextlib.redirect_stdout(sys.stderr) if to_stdout else contextlib.nullcontext()
    with quiet, dot_time_limit(args.timeout):
        G = graph_of_script(args.script, args.roots, backward=not args.no_backward,
                            max_nodes=args.max_nodes, argv=args.script_args)
        if args.steps is not None or fmt not in ("json", "graphml", "dot"):
            check_layout(G)  # refused now rather than after a minute of dot
        if args.steps is not None:
            _write_steps(G, args.steps, args)
        if output is not None and fmt in VIDEO_FORMATS:
            data = _render_video(G, fmt, None if to_stdout else output, args)
        elif output is not None:
            data = _render_static(G, fmt, args)
            if not to_stdout:
                write_atomically(output, data)
    if to_stdout:
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        except BrokenPipeError:
            # The reader left (e.g. `| head`): say nothing more on a closed pipe.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    return 0


def _is_folder(output: str) -> bool:
    return output.endswith(("/", os.sep)) or Path(output).is_dir()


def _render_many(scripts: list[str], args: argparse.Namespace) -> int:
    """Each script drawn into the folder OUT (default: here), several at once."""
    from .batch import Task, default_jobs, run_all

    if args.output == "-":
        raise CommandError("several scripts cannot all go to stdout: give a folder, e.g. "
                           "-o figures/", status=2)
    folder = Path(args.output or ".")
    if folder.exists() and not folder.is_dir():
        raise CommandError(f"several scripts are drawn into a folder, and {folder} is a file",
                           status=2)
    fmt = args.format or "svg"
    stems: dict[str, str] = {}
    for name in scripts:
        other = stems.setdefault(Path(name).stem, name)
        if other != name:
            raise CommandError(f"{other} and {name} would both be drawn as "
                               f"{Path(name).stem}.{fmt}: draw them in separate calls", status=2)
    _check_options(args, fmt)
    if _needs_dot(args, fmt):
        require_dot()
    make_folder(folder)
    _preload(scripts)
    tasks = []
    for name in scripts:
        single = argparse.Namespace(**vars(args))
        single.script, single.roots = name, []
        single.output = str(folder / f"{Path(name).stem}.{fmt}")
        if args.steps is not None:
            single.steps = args.steps / Path(name).stem
        tasks.append(Task(name, functools.partial(_guarded, functools.partial(_render, single)),
                          single.output))
    jobs = min(args.jobs or default_jobs(), len(tasks))
    started = time.monotonic()
    outcomes = run_all(tasks, jobs)
    failed = [outcome.task.label for outcome in outcomes if not outcome.ok]
    print(f"backpropviz: drew {len(tasks) - len(failed)} of {len(tasks)} scripts into "
          f"{folder}/ in {time.monotonic() - started:.1f} s ({jobs} at a time)"
          + (f"; failed: {', '.join(failed)}" if failed else ""), file=sys.stderr)
    return 1 if failed else 0


def _preload(scripts: list[str]) -> None:
    """Import torch once here, before the scripts are forked, if one of them uses it."""
    for name in scripts:
        with contextlib.suppress(OSError):
            if imports_torch(Path(name).read_text(encoding="utf-8", errors="replace")):
                with contextlib.suppress(ImportError):
                    import torch  # noqa: F401
                return


def _destination(args: argparse.Namespace, formats: Sequence[str] = FORMATS,
                 suffix: str = "") -> tuple[str, Path | str | None]:
    """The format, and where it goes: a path, '-' for stdout, or None (steps only)."""
    if args.output == "-":
        return args.format or "svg", "-"
    if args.output is None:
        fmt = args.format or "svg"
        if getattr(args, "steps", None) is not None:
            return fmt, None
        return fmt, Path(f"{Path(args.script).stem}{suffix}.{fmt}")
    path = Path(args.output)
    if path.is_dir():
        raise CommandError(f"cannot write {args.output}: it is a directory")
    extension = path.suffix[1:].lower()
    if args.format and extension in FORMATS and extension != args.format:
        raise CommandError(f"-o {args.output} is a .{extension} file but --format is "
                           f"{args.format}: give one of them, or make them agree", status=2)
    if args.format:
        return args.format, path
    if not extension:
        raise CommandError(f"cannot tell the format of {args.output!r} without an extension "
                           f"(one of {list(formats)}); name it e.g. {path.name}.svg or pass "
                           "--format", status=2)
    if extension not in formats:
        raise CommandError(f"unknown format: {extension!r} (must be one of {list(formats)})",
                           status=2)
    return extension, path


def _needs_dot(args: argparse.Namespace, fmt: str) -> bool:
    """Whether graphviz's dot will run: for every picture, not for an export or DOT text."""
    return args.steps is not None or fmt not in (*EXPORT_FORMATS, "dot")


def _check_options(args: argparse.Namespace, fmt: str) -> None:
    """Usage errors between options, caught before the script runs."""
    video_options = [f"--{name}" for name in ("quality", "phase", "speed")
                     if getattr(args, name) is not None]
    if video_options and fmt not in VIDEO_FORMATS:
        raise CommandError(f"{', '.join(video_options)}: for videos only "
                           f"({', '.join(VIDEO_FORMATS)}), not for {fmt}", status=2)
    if args.fit is not None and fmt not in DRAW_FORMATS and args.steps is None:
        raise CommandError(f"--fit lays out figures ({', '.join(DRAW_FORMATS)}, --steps), "
                           f"not {fmt}" + (": the page fits itself to its window"
                                           if fmt == "html" else ""), status=2)
    if args.symbolic and (fmt not in DRAW_FORMATS or args.steps is not None):
        raise CommandError("--symbolic draws a figure without numbers "
                           f"({', '.join(DRAW_FORMATS)}); the steps, the page and the clip "
                           "show the numbers", status=2)
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


# ---------------------------------------------------------------- check


def _check(args: argparse.Namespace) -> int:
    """Grade the script's engine; print the report; 0 if every gradient matches."""
    output = None
    if args.output is not None:
        output = Path(args.output)
        fmt = output.suffix[1:].lower()
        if fmt not in CHECK_FORMATS:
            raise CommandError(f"unknown format for the report: {fmt or args.output!r} (must be "
                               f"one of {list(CHECK_FORMATS)})", status=2)
        _check_writable(output)
    from .check import check_script

    try:
        report = check_script(args.script, args.roots)
    except BackpropvizError as error:
        # Could not grade at all: 2, so that a grader tells it from wrong gradients (1).
        print(f"backpropviz: error: {error}", file=sys.stderr)
        return 2
    print(report.text())
    if output is not None:
        args.precision, args.no_backward = 4, False
        write_atomically(output, _render_static(report.graph, fmt, args))
    return 0 if report.ok else 1


# ---------------------------------------------------------------- memory


def _memory(args: argparse.Namespace) -> int:
    """Chart (or export) the memory timeline of the script's recorded pass."""
    fmt, output = _destination(args, MEMORY_FORMATS, suffix="_memory")
    if not Path(args.script).is_file():
        raise CommandError(f"no such script: {args.script}")
    if output != "-":
        _check_writable(Path(output))
    from .memory_chart import memory_output

    to_stdout = output == "-"
    quiet = contextlib.redirect_stdout(sys.stderr) if to_stdout else contextlib.nullcontext()
    with quiet:
        G = graph_of_script(args.script, args.roots, max_nodes=args.max_nodes)
        data = memory_output(G, fmt, theme=args.theme, title=None)
    if to_stdout:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        write_atomically(output, data)
    return 0


# ---------------------------------------------------------------- outputs


def _render_static(G: nx.MultiDiGraph, fmt: str, args: argparse.Namespace) -> bytes:
    """The picture (or export) as bytes, all in memory."""
    from .diagram import IR_FORMATS, draw

    if fmt in IR_FORMATS:
        return IR_FORMATS[fmt](G).encode()
    G = _view(G, args)

    options = {"rankdir": args.rankdir or "LR", "theme": args.theme,
               "precision": args.precision}
    if fmt == "html":
        from .html import to_html

        return to_html(G, **options).encode()
    diagram = draw(G, forward_only=args.no_backward, **{**options, **_figure_options(args)})
    _say_fit(diagram.fit)
    return diagram.source.encode() if fmt == "dot" else diagram.pipe(fmt)


def _view(G: nx.MultiDiGraph, args: argparse.Namespace) -> nx.MultiDiGraph:
    """The graph as drawn: groups closed (unless --expand), modules, compact."""
    from .views import drawn_graph

    return drawn_graph(G, expand=getattr(args, "expand", False),
                       modules=getattr(args, "modules", False),
                       compact_view=getattr(args, "compact", False))


def _figure_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of a static figure beyond direction, theme and precision."""
    options: dict[str, Any] = {"show_constants": getattr(args, "show_constants", False),
                               "expand": getattr(args, "expand", False),
                               "symbolic": getattr(args, "symbolic", False)}
    if getattr(args, "fit", None) is not None:
        options["fit"] = args.fit
        if args.rankdir is None:
            options["rankdir"] = None  # fit chooses
    return options


def _say_fit(chosen: Any) -> None:
    """A note on stderr when a fitted figure is too small to read in its frame."""
    if chosen is not None and chosen.advice:
        print(f"backpropviz: note: {chosen.advice}", file=sys.stderr)


def _render_video(G: nx.MultiDiGraph, fmt: str, output: Path | None,
                  args: argparse.Namespace) -> bytes | None:
    """Render the clip to ``output`` (it reports what it wrote), or return its bytes."""
    from .animate import render_video

    G = _view(G, args)

    options = {"quality": args.quality or "l", "speed": args.speed or 1.0,
               "phase": "forward" if args.no_backward else (args.phase or "both"),
               "theme": args.theme, "rankdir": args.rankdir or "LR",
               "precision": args.precision,
               "max_nodes": args.max_nodes, "progress": output is not None}
    if output is not None:
        render_video(G, output, **options)  # atomic: nothing is left there on failure
        return None
    with tempfile.TemporaryDirectory() as folder:
        return render_video(G, Path(folder) / f"clip.{fmt}", **options).read_bytes()


def _write_steps(G: nx.MultiDiGraph, directory: Path, args: argparse.Namespace) -> None:
    """One SVG per backward step into ``directory``, moved in only once all are drawn."""
    from .diagram import render_steps

    with staged_folder(directory, stale="step-[0-9][0-9][0-9].*") as staging:
        options = {"rankdir": args.rankdir or "LR", **_figure_options(args)}
        render_steps(_view(G, args), staging, theme=args.theme, precision=args.precision,
                     **options)
