"""The command line: ``backpropviz render SCRIPT`` runs a script and draws its graph."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .errors import BackpropvizError, Note, UsageError
from .options import (
    CLIP,
    CLIP_MAX_NODES,
    DEFAULT_MAX_NODES,
    FIGURE,
    FORMATS,
    KINDS,
    MEMORY_FORMATS,
    PAGE,
    add_arguments,
    format_of,
    from_arguments,
    needs_dot,
    positive,
)

__all__ = ["build_parser", "main"]

_CLIP_OPTIONS = ("quality", "phase", "speed", "memory")


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors on one line like every other error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0, 1 for a failed run, 2 for usage)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # at once: without the parser, which imports the front end
        print(f"backpropviz {__version__}")
        return 0
    # Everything after the first `--` is the script's own sys.argv[1:].
    script_args = argv[argv.index("--") + 1:] if "--" in argv else []
    ours = argv[:argv.index("--")] if "--" in argv else argv
    try:
        args = build_parser().parse_args(ours)
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else 0
    except UsageError as error:
        return _fail(error, 2)
    args.script_args = script_args
    return _guarded(lambda: args.command(args))


def _fail(error: BaseException, status: int) -> int:
    print(f"backpropviz: error: {error}", file=sys.stderr)
    return status


def _guarded(command: Callable[[], int]) -> int:
    """Run a command; its errors become one line on stderr and an exit status, and
    the library's notes (a figure too small for its frame) lines of their own."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", Note)
        shown, said = warnings.showwarning, set()  # (a note once, though two outputs meet it)

        def show(message: Any, category: type, *rest: Any, **more: Any) -> None:
            if not issubclass(category, Note):
                shown(message, category, *rest, **more)
            elif str(message) not in said:
                said.add(str(message))
                print(f"backpropviz: note: {message}", file=sys.stderr)

        warnings.showwarning = show
        try:
            return command()
        except UsageError as error:
            return _fail(error, 2)
        except BackpropvizError as error:  # each says what went wrong in one sentence
            return _fail(error, 1)
        except KeyboardInterrupt as interrupt:  # ScriptInterrupted says where the script was
            print(f"backpropviz: {str(interrupt) or 'interrupted'}", file=sys.stderr)
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
    add_arguments(render, lambda name: name not in _CLIP_OPTIONS)
    render.add_argument("--steps", metavar="DIR", type=Path,
                        help="also write one picture per backward step into DIR (SVG, or "
                             "--format's png or pdf), numbered so "
                             "they sort (with --steps, the single drawing is written only "
                             "if -o is given)")
    render.add_argument("--max-nodes", type=positive(int), metavar="N",
                        help="refuse to draw graphs with more than N values and ops "
                             f"(default {DEFAULT_MAX_NODES}, for videos the animation's "
                             f"limit, {CLIP_MAX_NODES}; .json, .graphml and .txt exports "
                             "have no limit)")
    add_arguments(render.add_argument_group(f"videos ({', '.join(KINDS[CLIP])})"),
                lambda name: name in _CLIP_OPTIONS)
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
                            f"({', '.join(_CHECK_FORMATS)})")
    check.add_argument("--rankdir", choices=("LR", "RL", "TB", "BT"), default="LR",
                       help="direction of the data flow (default LR)")
    add_arguments(check, lambda name: name in ("theme", "script_timeout"))
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
    add_arguments(memory, lambda name: name in ("theme", "script_timeout", "iteration"))
    memory.add_argument("--max-nodes", type=positive(int), metavar="N",
                        default=DEFAULT_MAX_NODES,
                        help=f"refuse graphs with more than N values and ops (default "
                             f"{DEFAULT_MAX_NODES})")
    return parser


_CHECK_FORMATS = (*KINDS[FIGURE], *KINDS[PAGE])


def _render(args: argparse.Namespace) -> int:
    from . import output as out
    from .batch import draw_many
    from .files import require_writable, require_writable_folder
    from .graphviz import require_dot
    from .schema import validated_once
    from .script import GraphTooLargeError, require_script
    from .train_record import graph_to_draw, record_training

    positionals = [args.script, *args.roots]
    if len(positionals) > 1 and all(name.endswith(".py") for name in positionals):
        if args.output == "-" or (args.output is not None and not Path(args.output).is_dir()
                                  and Path(args.output).suffix[1:].lower() in FORMATS):
            where = "stdout" if args.output == "-" else args.output
            raise UsageError(f"several scripts cannot all go to {where}: give a folder, "
                             "e.g. -o figures/")
        out.prepare(args.format or "svg", from_arguments(args), steps=args.steps is not None)
        if needs_dot(args.format or "svg", args.steps is not None):
            require_dot()

        def one(script: str, output: Path) -> int:
            steps = args.steps / Path(script).stem if args.steps is not None else None
            single = argparse.Namespace(**{**vars(args), "script": script, "roots": [],
                                           "output": str(output), "steps": steps})
            return _guarded(lambda: _render(single))
        return draw_many(positionals, Path(args.output or "."), args.format or "svg", one,
                         args.jobs)
    if args.output not in (None, "-") and (args.output.endswith(("/", os.sep))
                                           or Path(args.output).is_dir()):
        args.output = str(Path(args.output) / f"{Path(args.script).stem}.{args.format or 'svg'}")
    fmt = format_of(args.output, args.format)
    output = args.output
    if output is None and args.steps is None:
        output = f"{Path(args.script).stem}.{fmt}"
    options = from_arguments(args, progress=output not in (None, "-"))
    steps = args.steps is not None
    max_nodes = out.prepare(fmt, options, steps=steps)
    require_script(Path(args.script))
    if needs_dot(fmt, steps):
        require_dot()  # before the script runs, not after
    if output not in (None, "-"):
        require_writable(output)
    if steps:
        require_writable_folder(args.steps)
    if options.training:  # a training run, written as a whole
        out.write_training(record_training(args.script, options, roots=args.roots,
                                           argv=args.script_args), output, options)
        return 0
    with out.stdout_for(output):
        try:
            G = graph_to_draw(args.script, args.roots, options.replace(max_nodes=max_nodes),
                              argv=args.script_args)
        except GraphTooLargeError as refused:  # (a loop past --max-nodes is drawn rolled)
            G, options = out.rolled_past_the_limit(refused, fmt, options)
        with validated_once():  # (G was, where graph_to_draw built it: the writers need not)
            if steps:  # (in --format's figure format, if it names one)
                out.write_steps(G, args.steps, options,
                                format=args.format if args.format in KINDS[FIGURE] else "svg")
            if output == "-":
                data = out.render(G, fmt, options)
            elif output is not None:
                out.write(G, output, options, format=fmt)
    return out.to_stdout(data) if output == "-" else 0


def _check(args: argparse.Namespace) -> int:
    """Grade the script's engine; print the report; 0 if every gradient matches."""
    from . import output as out
    from .check import check_script
    from .files import require_writable

    if args.output is not None:
        format_of(args.output, formats=_CHECK_FORMATS, what="the report")
        require_writable(args.output)
    try:
        report = check_script(args.script, args.roots, argv=args.script_args,
                              script_timeout=args.script_timeout)
    except BackpropvizError as error:
        # Could not grade at all: 2, so that a grader tells it from wrong gradients (1).
        return _fail(error, 2)
    print(report.text())
    if args.output is not None:
        out.write(report.graph, args.output, from_arguments(args))
    return 0 if report.ok else 1


def _memory(args: argparse.Namespace) -> int:
    """Chart (or export) the memory timeline of the script's recorded pass."""
    from . import output as out
    from .files import require_writable, write_atomically
    from .schema import validated_once
    from .script import require_script
    from .train_record import graph_to_draw

    fmt = format_of(args.output, args.format, MEMORY_FORMATS)
    output = args.output or f"{Path(args.script).stem}_memory.{fmt}"
    require_script(Path(args.script))
    if output != "-":
        require_writable(output)
    with out.stdout_for(output):
        G = graph_to_draw(args.script, args.roots, from_arguments(args), argv=args.script_args)
    with validated_once():  # (G was, where graph_to_draw built it)
        data = out.render_memory(G, fmt, from_arguments(args))
    if output == "-":
        return out.to_stdout(data)
    write_atomically(output, data)
    return 0
