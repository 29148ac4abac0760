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
import types
from typing import Any

from .cli import build_parser
from .errors import BackpropvizError, UsageError
from .files import require_writable
from .options import CLIP, format_of, from_arguments, kind_of
from .output import prepare, show, write, write_steps
from .schema import validated_once
from .script import (
    ScriptError,
    find_roots,
    graph_of_namespace,
    may_use_another_engine,
    recording_for,
    time_limit,
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
    from IPython.core.error import UsageError as CellError

    shell = get_ipython()
    try:
        return _run(shell, line, cell)
    except BackpropvizError as error:
        # One line, no traceback, and the cell fails (Run All and nbval stop there).
        raise CellError(f"backpropviz: {error}") from None


def _run(shell: Any, line: str, cell: str) -> Any:
    try:
        args = build_parser().parse_args(["render", "<cell>", *shlex.split(line)])
    except SystemExit:  # --help: argparse printed it
        return None
    try:
        fmt = format_of(args.output, args.format)
    except UsageError:
        fmt = None
    if args.output == "-" or fmt is None or kind_of(fmt) == CLIP:
        raise UsageError(f"a cell shows a picture or a page, not {args.output or fmt}; "
                         "write videos and other files from the command line")
    options = from_arguments(args)
    if options.iterations is not None or options.iteration is not None:
        raise UsageError("a cell draws its last backward pass; record a training loop "
                         "(--iterations, --iteration) from the command line: backpropviz "
                         "render train.py --iterations")
    max_nodes = prepare(fmt, options, steps=args.steps is not None)
    if args.output is not None:
        require_writable(args.output)
    before = {name: id(obj) for name, obj in shell.user_ns.items()}
    # A cell may compute with a framework an earlier cell imported.
    imported = {obj.__name__.split(".")[0] for obj in shell.user_ns.values()
                if isinstance(obj, types.ModuleType)}
    with recording_for(cell, imported) as recording:
        with watching(None, other_engines=may_use_another_engine(cell)) as watch, \
                time_limit(options.script_timeout, "the cell"):
            result = shell.run_cell(cell, store_history=False)
        if not result.success:  # IPython has shown the cell's traceback
            raise ScriptError("the cell failed, so there is no graph to draw")
        namespace = watch.names(shell.user_ns)
        roots = list(args.roots)
        if not roots and not watch.roots:
            # The outputs among what this cell assigned, not among every cell's values.
            assigned = {name: obj for name, obj in shell.user_ns.items()
                        if before.get(name) != id(obj)}
            roots = list(find_roots(assigned, script="the cell", recording=recording))
        G = graph_of_namespace(namespace, roots, called=watch.roots, recording=recording,
                               backward=not options.forward_only,
                               max_nodes=max_nodes, fold=not options.keep_sums,
                               where="the cell", source=cell)
    with validated_once():  # (G was, where graph_of_namespace built it: the writers need not)
        if args.output is not None:
            write(G, args.output, options, format=fmt)
        if args.steps is not None:
            write_steps(G, args.steps, options)
        # As the command line draws it (groups closed...): the page, or the picture.
        return show(G, options, format="html" if fmt == "html" else "svg")
