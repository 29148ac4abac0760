"""The DOT text of a figure: the view drawn, its placement and its step band, written."""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from .dot import Writer, dot_options
from .errors import DrawError
from .ir import IRError
from .placement import placement
from .schema import validated
from .step_bands import step_bands
from .steps import state_at
from .untangling import untangled
from .views import drawn_graph

__all__ = ["to_dot"]


def to_dot(G: nx.MultiDiGraph, *, rankdir: str = "LR", theme: str = "light",
           precision: int = 4, forward_only: bool = False, step: int | None = None,
           legend: bool = True, show_constants: bool = False,
           wrap: int | Sequence[int] = 1, frame: tuple[int, int] | None = None,
           expand: bool = False, modules: bool = False, compact: bool = False,
           symbolic: bool = False) -> str:
    """DOT text drawing the IR graph ``G`` (validated first).

    Graphviz node names and ``id`` attributes are the IR ids; edge ids are
    ``"u->v#key"``; ``class`` attributes name the kind, role and op, so the
    SVG can be scripted. ``step=None`` draws every gradient; ``step=k`` the
    state after k backward steps, with the k-th op highlighted. Every step
    and the final picture share one layout: a gradient not yet computed keeps
    its place, empty. The text is the same, byte for byte, for the same graph
    and options.

    Constants (numbers written in the script) are drawn without the
    gradient the engine gave them and without the saved-for-backward mark,
    unless ``show_constants``; a value without a name is headed by the
    expression that computed it, in a smaller face. ``wrap=k`` folds the
    graph into k rows (k columns for TB and BT), cut where fewest edges
    cross (``wrap=(8, 15)``: rows begin at ranks 8 and 15);
    ``frame=(width, height)`` scales the picture to fill that many pixels
    (see ``fit``).

    The ops of a ``group`` are drawn as one operator named after it, unless
    ``expand``, which draws them in a box; with ``modules``, a PyTorch
    model's innermost modules are drawn so too (``model.0``); ``compact``
    also closes every run of ops whose results have no name (views.py).
    ``symbolic`` draws names only, no numbers, as the book's figures do.
    """
    validated(G)
    G = drawn_graph(G, expand=expand, modules=modules, compact_view=compact)
    options = untangled(G, dot_options(rankdir, theme, precision, forward_only, step, legend,
                                       show_constants, wrap, frame, expand, symbolic))
    try:
        state = state_at(G, step)
    except IRError as error:
        raise DrawError(str(error)) from None
    band = step_bands(G, options.theme, precision)[step] if step is not None and legend \
        and not (forward_only or symbolic) and G.graph.get("backward_order") else None
    return Writer(G, options, state, placement(G, options), band).dot()
