"""What each op of the forward pass computed, in the engine's numbers: a line per op.

``z = W₁ x = [1, −1; 0, 1] · [1; 2] = [−1; 2]``: the result's name, the op applied to
its operands' names and then to their numbers as recorded, and the result the engine
recorded. No number is computed here: the reference engine (worked.forward_result) only
says whether the line is true as written (``=``), true at the precision shown (``≈``),
or not what the op gives, which the line then says (a student's engine whose forward
pass is wrong).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .formatting import number_text
from .ir import operand_edges
from .names import SMALL_ENTRIES, Name, op_expression, value_names
from .worked import (
    RESULT_ENTRIES,
    as_written,
    exactly,
    forward_result,
    same,
    written_entries,
    written_exactly,
)

__all__ = ["ForwardLine", "forward_lines"]


@dataclass(frozen=True)
class ForwardLine:
    """One op's line, in parts: ``named`` (the result's own name, "" where it has none:
    its name is the expression), ``expression`` (the op of its operands' names), ``numbers`` (of
    their numbers; "" where one is too large to write), ``sign`` and ``result`` (the
    engine's result as written; "" where it is too large to write, and its ``shape`` is
    said instead), ``note`` (where the engine's result is not what the op gives, in
    words)."""

    named: str
    expression: str
    numbers: str = ""
    sign: str = "="
    result: str = ""
    note: str = ""
    shape: str = ""
    short: str = ""  # the result's name as its box is headed (a long expression cut short)

    @property
    def parts(self) -> list[str]:
        """The line's parts between its signs: name, expression, numbers, result."""
        return [part for part in (self.named, self.expression, self.numbers) if part]

    @property
    def text(self) -> str:
        line = " = ".join(self.parts)
        if self.result:
            line += f" {self.sign} {self.result}"
        if self.shape:
            line += f", {self.shape}"
        return line + self.note

    def shorter(self) -> list[ForwardLine]:
        """The line said more briefly, for less room: in names alone; then the result's
        name and number alone (the op and its numbers left to the picture)."""
        return [replace(self, numbers="", sign="=", result="", note=""),
                ForwardLine(self.short, "", result=self.result, shape=self.shape)]


def forward_lines(G: nx.MultiDiGraph, precision: int = 4) -> dict[Any, ForwardLine]:
    """A ForwardLine for every op of ``G`` that has a result, by op."""
    names = value_names(G)
    lines = {}
    for op, attrs in G.nodes(data=True):
        if attrs.get("kind") != "op" or not G.succ[op]:
            continue
        result = next(iter(G.successors(op)))
        lines[op] = replace(_line(G, op, result, names, precision), short=names[result].text)
    return lines


def _line(G: nx.MultiDiGraph, op: Any, result: Any, names: dict[Any, Name],
          precision: int) -> ForwardLine:
    operands = [u for u, _, _ in operand_edges(G, op)]
    expression = op_expression(G, op, [names[u] for u in operands]).text
    # (an unnamed result's name is its expression, or that shortened: said once, whole)
    named = names[result].text if G.nodes[result].get("label") else ""
    data = [G.nodes[u].get("data") for u in operands]
    recorded = G.nodes[result].get("data")
    if recorded is None or written_entries(recorded) > RESULT_ENTRIES:  # (its shape said)
        shape = np.shape(recorded) if recorded is not None else ()
        return ForwardLine(named, expression, shape=" × ".join(map(str, shape))
                           if len(shape) > 1 else f"{shape[0]} numbers" if shape else "")
    if any(x is None or written_entries(x) > SMALL_ENTRIES for x in data):  # (its result alone)
        return ForwardLine(named, expression, result=number_text(recorded, precision))
    rows = _as_rows(G, op, data)
    numbers = op_expression(G, op, [_number(x, precision, row)
                                     for x, row in zip(data, rows, strict=True)],
                            numbers=tuple(np.ndim(x) for x in data))
    left_row = rows[0] and np.ndim(recorded) == 1  # (a row times a matrix: a row)
    # (a result of operands written exactly is written whole if a digit or two more do it:
    # 3 · 3.375 = 10.125, not ≈ 10.12, which reads as a rounding off the product)
    operands_exact = all(written_exactly(x, precision) for x in data)
    digits = next((n for n in range(precision, precision + 3)
                   if written_exactly(recorded, n)), precision) if operands_exact else precision
    written = number_text(np.reshape(recorded, (1, -1)) if left_row else recorded, digits)
    reference = forward_result(G, op)
    if reference is not None and not same(reference, recorded):
        return ForwardLine(named, expression, numbers.text,
                           note=f" (but the engine computed {written}: not what "
                                f"{ops.get(G.nodes[op]['op']).symbol} gives)")
    if reference is not None:
        as_shown = forward_result(G, op, precision)
        exact = as_shown is not None and exactly(as_shown, as_written(recorded, digits))
    else:  # (an op the reference does not have: exact only where nothing is rounded)
        exact = operands_exact and written_exactly(recorded, digits)
    if numbers.text == written:  # (an op that gives its operand, written the same)
        return ForwardLine(named, expression, result=written)
    return ForwardLine(named, expression, numbers.text, "=" if exact else "≈", written)


def _as_rows(G: nx.MultiDiGraph, op: Any, data: list[Any]) -> list[bool]:
    """Which operands are written as rows: a vector beside a matrix in an op that
    broadcasts (numpy aligns it as a row), a vector on the left of a matrix product
    (x W, x · y), and a linear layer's bias on a batch."""
    spec = ops.get(G.nodes[op]["op"])
    ndims = [np.ndim(x) for x in data]
    if spec.flow == ops.LINEAR:  # (x Wᵀ + b on a batch of rows: b is added to each row)
        return [i == 2 and ndims[0] > 1 for i in range(len(data))]
    if spec.flow == ops.ROWS_COLUMNS:
        return [i == 0 and n == 1 for i, n in enumerate(ndims)]
    if spec.broadcasts and any(n > 1 for n in ndims):
        return [n == 1 for n in ndims]
    return [False] * len(data)


def _number(x: Any, precision: int, row: bool) -> Name:
    """A recorded number as an operand is written: a negative scalar binds as a sign
    does (it is put in parentheses in a product), an array as a whole."""
    text = number_text(np.reshape(x, (1, -1)) if row else x, precision)
    return Name(text, text, ops.SIGNED if text.startswith("−") else ops.ATOM)
