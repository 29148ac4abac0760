"""A training run as the script ran it: each kept backward pass with the update after it.

This module holds the run's shape, shared by the recorder that fills it and the
writers that draw it (the run's JSON, its figure, its page and its clip). A
``Run`` is a list of ``Iteration``: the loss of that pass, the IR of the pass
(values as the forward pass used them, gradients as backward left them), and
for each parameter what the script then did to it before the next forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx

__all__ = ["Iteration", "Run", "Update"]


@dataclass(frozen=True)
class Update:
    """One parameter across one update: its value as the pass used it, the gradient
    backward gave it, and its value when the next forward pass read it (a float or
    nested lists for arrays, as the IR stores data). ``rate`` is the learning rate
    read off as ``-(after - before) / grad`` when that is the same for every entry
    (plain SGD), else None (another optimizer: before and after only)."""

    before: Any
    grad: Any
    after: Any
    rate: float | None = None


@dataclass(frozen=True)
class Iteration:
    """One kept backward pass: its ``index`` in the script's loop (0 for the first
    pass, counting every pass, kept or not), the ``loss`` it started from, its IR
    ``graph``, and the ``parameters``' updates by the name the figures give them."""

    index: int
    loss: float
    graph: nx.MultiDiGraph
    parameters: dict[str, Update] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    """The kept iterations, first first; ``every`` is the sampling step (1: every
    pass), ``total`` how many backward passes the script ran, and ``notes`` what a
    reader should know (the graph changed between passes, passes not kept...)."""

    iterations: list[Iteration]
    every: int = 1
    total: int = 0
    notes: list[str] = field(default_factory=list)
