"""How an update of a parameter is written, with the recorded numbers, in the page and the clip.

Plain SGD (a learning rate read off the run) is written as the rule with its
numbers put in, ``w ← w − η·∂L/∂w = 2 − 0.1 · 1.5 = 1.85``; any other
optimizer as the value before and after, ``w: 2 → 1.85``. Nothing is
recomputed: the three numbers are the run's.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from .formatting import display_number, number_text
from .names import Name, partial_name
from .training import Iteration, Update
from .worked import EXTRA_DIGITS, RESULT_ENTRIES, as_written, exactly

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
    digits = _digits(update, precision) if small and update.rate is not None else precision
    before, grad = (number_text(x, digits) for x in (update.before, update.grad)) \
        if small else ("", "")
    after = number_text(update.after, precision) if small else ""
    if update.rate is None:
        return f"{name}: {before} → {after}" if small else \
            f"{name}: changed by the optimizer (no single learning rate)"
    derivative = partial_name(Name(top, top), Name(name, name)).text
    rule = f"{name} ← {name} − η·{derivative}"
    rate = display_number(update.rate, precision)
    if not small:
        return f"{rule}, η = {rate}"
    exact = exactly(_worked(update, digits, precision), as_written(update.after, precision))
    return f"{rule} = {before} − {rate} · {_factor(grad)} {'=' if exact else '≈'} {after}"


def _worked(update: Update, digits: int, precision: int) -> np.ndarray:
    """w − η·g worked out from its numbers as written (w and g to ``digits``)."""
    return np.asarray(as_written(update.before, digits)) - as_written(update.rate, precision) \
        * np.asarray(as_written(update.grad, digits))


def _digits(update: Update, precision: int) -> int:
    """The fewest digits, ``precision`` or up to EXTRA_DIGITS more, with which w and g as
    written give the new w as written (2 − 0.1 · 1.5 = 1.85; −0.3764 − 0.1·(−0.2556) is
    −0.35084, not the run's −0.3509: −0.37645 − 0.1·(−0.25556))."""
    want = number_text(update.after, precision)
    return next((digits for digits in range(precision, precision + EXTRA_DIGITS + 1)
                 if number_text(_worked(update, digits, precision), precision) == want),
                precision)


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
