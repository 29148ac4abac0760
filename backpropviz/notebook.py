"""IPython: ``%load_ext backpropviz``, then a ``%%backpropviz`` cell runs and shows its graph.

The cell runs in the notebook's namespace, as any cell does (what it defines
stays defined), and its graph is found as ``backpropviz render`` finds a
script's: the ROOTs named on the magic's line, else the value its last
``backward()`` ran from, else the outputs among the names the cell assigned.
The line takes the command line's options::

    %%backpropviz --rankdir BT -o figure.svg
    a, b = Value(2.0), Value(-3.0)
    L = a * b + b
    L.backward()

``--format html`` (or ``-o page.html``) shows the step-through page instead
of the picture.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from . import cli
from .diagram import draw
from .errors import BackpropvizError
from .files import write_atomically
from .graphviz import dot_time_limit
from .html import step_through
from .script import (
    find_roots,
    graph_of_namespace,
    may_use_another_engine,
    recording_for,
)
from .watch import watching

__all__ = ["backpropviz_magic", "load_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """Register the ``%%backpropviz`` cell magic."""
    ipython.register_magic_function(backpropviz_magic, magic_kind="cell",
                                    magic_name="backpropviz")


def backpropviz_magic(line: str, cell: str) -> Any:
    """``%%backpropviz [ROOT ...] [options of backpropviz render]``: run the cell, show
    its graph (a Diagram, or a Page with ``--format html``), and write ``-o OUT``."""
    from IPython import get_ipython

    shell = get_ipython()
    try:
        return _run(shell, line, cell)
    except (BackpropvizError, cli.CommandError) as error:
        print(f"backpropviz: error: {error}", file=sys.stderr)
        return None


def _run(shell: Any, line: str, cell: str) -> Any:
    try:
        args = cli.build_parser().parse_args(["render", "<cell>", *shlex.split(line)])
    except SystemExit:  # --help: argparse printed it
        return None
    fmt = args.format or (Path(args.output).suffix[1:].lower() if args.output else "svg")
    if args.output == "-" or fmt in cli.VIDEO_FORMATS or fmt not in cli.FORMATS:
        raise cli.CommandError(f"a cell shows a picture or a page, not {args.output or fmt}; "
                               "write videos and other files from the command line")
    if args.output is not None:
        cli._check_writable(Path(args.output))
    before = {name: id(obj) for name, obj in shell.user_ns.items()}
    with recording_for(cell) as recording:
        with watching(None, other_engines=may_use_another_engine(cell)) as watch:
            result = shell.run_cell(cell, store_history=False)
        if not result.success:
            return None  # IPython has shown the cell's traceback
        namespace = watch.names(shell.user_ns)
        roots = list(args.roots)
        if not roots and not watch.roots:
            # The outputs among what this cell assigned, not among every cell's values.
            assigned = {name: obj for name, obj in shell.user_ns.items()
                        if before.get(name) != id(obj)}
            roots = list(find_roots(assigned, script="the cell"))
        with dot_time_limit(args.timeout):
            G = graph_of_namespace(namespace, roots, called=watch.roots, recording=recording,
                                   backward=not args.no_backward,
                                   max_nodes=args.max_nodes or cli.DEFAULT_MAX_NODES,
                                   where="the cell", source=cell)
            if args.output is not None:
                write_atomically(args.output, cli._render_static(G, fmt, args))
            if args.steps is not None:
                cli._write_steps(G, args.steps, args)
    options = {"rankdir": args.rankdir or "LR", "theme": args.theme,
               "precision": args.precision}
    shown = cli._view(G, args)  # as the command line draws it (groups closed...)
    if fmt == "html":
        return step_through(shown, **options)
    return draw(shown, forward_only=args.no_backward,
                **{**options, **cli._figure_options(args)})
