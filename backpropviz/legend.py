"""The key under a figure: what its colours and marks mean, and what its producer says."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Collection
from html import escape
from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .formatting import byte_size, number_text
from .memory import value_bytes
from .style import LEGEND_PT, MARK_PT
from .typeset import GAP, font
from .worked import off_the_rule, out_of_order, wrong_seed

__all__ = ["blocks_gradient", "legend_html"]


def legend_html(G: nx.MultiDiGraph, options: Any, *, partials: bool, forks: bool,
                dead: bool, plain: Collection[Any]) -> str | None:
    """A key to the colours of ``G``'s figure drawn with ``options`` (dot's): the same
    at every backward step. ``partials``: gradients are drawn; ``forks``: a fork's
    contributions on its edges; ``dead``: a gate's zeros; ``plain``: the constants
    drawn without their marks."""
    t = options.theme
    nodes = G._node.values()  # (networkx's own dict, read only)
    items = [font("value", t.text, LEGEND_PT)]
    if any(attrs.get("role") == "param" for attrs in nodes):
        items.append(f'<TABLE BORDER="1" CELLBORDER="0" COLOR="{t.node_line}" '
                     f'CELLPADDING="2" CELLSPACING="0" BGCOLOR="{t.param_fill}" '
                     f'STYLE="ROUNDED"><TR><TD>'
                     f'{font("parameter", t.text, LEGEND_PT)}</TD></TR></TABLE>')
    if partials:
        items.append(font("gradient", t.grad, LEGEND_PT))
    if forks:
        items.append(font("on an edge: its share of a fork's sum", t.grad, LEGEND_PT))
    if dead:
        # The zero as drawn, the gate as drawn (dashed), and what made it.
        blocking = _blocking_symbols(G)
        gate = (f'<TD><TABLE BORDER="1" CELLBORDER="0" COLOR="{t.dead_line}" CELLPADDING="2" '
                f'CELLSPACING="0" STYLE="ROUNDED,DASHED"><TR><TD>'
                f'{font(escape(blocking[0]), t.text, LEGEND_PT)}</TD></TR></TABLE></TD>'
                if blocking else "")
        items.append(f'<TABLE BORDER="0" CELLPADDING="1" CELLSPACING="0">'
                     f'<TR><TD BGCOLOR="{t.dead_fill}">{font("0", t.dead_text, LEGEND_PT)}'
                     f'</TD><TD>{font(GAP + "zeroed by " + _gates(G) + GAP, t.muted, LEGEND_PT)}'
                     f"</TD>{gate}</TR></TABLE>")
    if any(attrs.get("expected") is not None for attrs in nodes):
        items.append(font("wrong gradient", t.dead_text, LEGEND_PT)
                     + font(GAP + "(the reference's beneath)", t.muted, LEGEND_PT))
    # A student's engine, drawn as it computed (render's note says so too): said on the
    # picture, which a student keeps when the note has scrolled away, in a row under the
    # key (as wide as it, not wider: the figure is not set smaller for it).
    flagged = []
    if partials and not any(attrs.get("expected") is not None for attrs in nodes):
        seed = wrong_seed(G)
        if seed is not None:
            flagged.append(f"backward started from a gradient of {number_text(seed)}, not 1")
        elif any(off_the_rule(G)) or out_of_order(G):
            flagged.append("this engine's gradients are not the chain rule's "
                           "(backpropviz check says where)")
    if any(attrs.get("error_start") for attrs in nodes):
        items.append(font("●", t.dead_line, MARK_PT)
                     + font(GAP + "where the error starts", t.muted, LEGEND_PT))
    stored = G.graph.get("stored_bytes")
    if stored and not options.symbolic:
        note = f"{GAP}saved for backward: {byte_size(stored)}"
        unmarked = sum(value_bytes(G.nodes[node]) for node in plain
                       if G.nodes[node].get("stored"))
        if unmarked:  # (the figure leaves constants unmarked: say what they add)
            note += f" ({byte_size(unmarked)} of it constants)"
        items.append(font("●", t.saved, MARK_PT) + font(note, t.muted, LEGEND_PT))
    # What a producer says about the picture (e.g. how another engine's graph was read).
    notes = G.graph.get("notes", [])
    if len(items) == 1 and not notes and not flagged:
        return None
    cells = "".join(f"<TD>{item}</TD>" for item in items)
    # Notes wrap to the key's width (in characters, roughly), so that they
    # do not stretch it.
    width = max(48, sum(len(re.sub(r"<[^>]*>", "", item)) + 4 for item in items))
    rows = "".join(
        f'<TR><TD COLSPAN="{len(items)}" ALIGN="LEFT">'
        + '<BR ALIGN="LEFT"/>'.join(font(escape(line), colour, LEGEND_PT)
                                    for line in textwrap.wrap(note, width))
        + '<BR ALIGN="LEFT"/></TD></TR>'
        for note, colour in [*((note, t.dead_text) for note in flagged),
                             *((note, t.muted) for note in notes)])
    fill = f' BGCOLOR="{t.text_fill}"' if t.text_fill else ""
    return (f'<<TABLE BORDER="0" CELLSPACING="10" CELLPADDING="2"{fill}>'
            f"<TR>{cells}</TR>{rows}</TABLE>>")


def _blocking_symbols(G: nx.MultiDiGraph) -> list[str]:
    """The symbols of the gates drawn dashed: those that blocked some gradient."""
    return sorted({attrs["symbol"] for attrs in G._node.values()
                   if attrs.get("kind") == "op" and blocks_gradient(attrs.get("dead"))})


def blocks_gradient(dead: Any) -> bool:
    """Whether a gate's ``dead`` flag (one, or one per element) says it blocked some."""
    return dead is True or (type(dead) is list and bool(np.any(dead)))


def _gates(G: nx.MultiDiGraph) -> str:
    """What zeroed gradients in ``G``'s picture: "a dead ReLU", "dropout"…"""
    names = sorted({ops.get(op).gate_name for op, dead in
                    ((a.get("op"), a.get("dead")) for a in G._node.values())
                    if dead is not None and op is not None and ops.get(op).gate_name})
    return " or ".join(names) or "a gate"
