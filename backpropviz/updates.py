"""How an update of a parameter is written, with the recorded numbers, in the page and the clip.

Plain SGD (a learning rate read off the run) is written as the rule with its
numbers put in, ``w ← w − η·∂L/∂w = 2 − 0.1 · 1.5 = 1.85``; any other
optimizer as the value before and after, ``w: 2 → 1.85``. Nothing is
recomputed: the three numbers are the run's.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from .captions import RESULT_ENTRIES, Name, number_text, partial_name
from .formatting import display_number
from .training import Iteration, Update

__all__ = ["parameter_nodes", "start_line", "update_line"]


def _factor(text: str) -> str:
    """A number as a factor: a negative one in parentheses, ``(−1.5)``."""
    return f"({text})" if text.startswith("\u2212") else text


def update_line(name: str, update: Update, top: str, precision: int, *,
                numbers: bool = True) -> str:
    """What the update did to one parameter, in the recorded numbers as displayed.

    Plain SGD (a rate): ``w ← w − η·∂L/∂w = 2 − 0.1 · 1.5 = 1.85``; another optimizer:
    ``w: 2 → 1.85``. A parameter of more than a few entries (or any, without
    ``numbers``) gets the rule alone (its numbers are in its box and its tooltip)."""
    small = numbers and np.size(update.before) <= RESULT_ENTRIES
    before, grad, after = (number_text(x, precision)
                           for x in (update.before, update.grad, update.after)) \
        if small else ("", "", "")
    if update.rate is None:
        return f"{name}: {before} → {after}" if small else \
            f"{name}: changed by the optimizer (no single learning rate)"
    derivative = partial_name(Name(top, top), Name(name, name)).text
    rule = f"{name} ← {name} − η·{derivative}"
    rate = display_number(update.rate, precision)
    if not small:
        return f"{rule}, η = {rate}"
    return f"{rule} = {before} − {rate} · {_factor(grad)} = {after}"


def parameter_nodes(G: nx.MultiDiGraph, names: dict) -> dict[str, str]:
    """Each parameter's value node (SVG id) by the name the run gives it."""
    found = {}
    for node, attrs in G.nodes(data=True):
        if attrs.get("kind") == "value" and attrs.get("role") == "param":
            for name in {attrs.get("label"), names[node].text} - {None}:
                found.setdefault(name, str(node))
    return found


def start_line(iteration: Iteration, precision: int) -> str:
    """Where a later pass's forward pass starts: the parameters as it read them (the
    values an update left), those of a few entries written out."""
    values = ", ".join(f"{name} = {number_text(update.before, precision)}"
                       for name, update in iteration.parameters.items()
                       if np.size(update.before) <= RESULT_ENTRIES)
    return (f"Pass {iteration.index} starts from the parameters the last update left"
            f"{': ' + values if values else ''}.")
