"""How numbers are written: significant digits, true minus signs, superscripts, array grids."""

from __future__ import annotations

import itertools
import math
import weakref
from typing import Any

import numpy as np

__all__ = [
    "MAX_ITEMS",
    "MAX_SLICES",
    "SUMMARY_ENTRIES",
    "byte_size",
    "changed_note",
    "counted_parameters",
    "dead_cells",
    "display_number",
    "drawn_shape",
    "format_array",
    "format_number",
    "grid_indices",
    "listed",
    "norm",
    "number_text",
    "summarized",
    "superscript",
]

MAX_ITEMS = 6  # rows or columns shown of an array before eliding the middle
MAX_SLICES = 4  # matrices shown of an array of three or more axes
# An array of more entries is written as its shape and its norm (a ResNet's
# 64×3×7×7 kernel), not as slices of numbers no lecture hall can read.
SUMMARY_ENTRIES = 256
# A module operator names each parameter it holds up to this many; more, it counts them.
NAMED_HELD = 2

_SUPERSCRIPT = str.maketrans("0123456789-−.", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁻·")


def byte_size(n: int) -> str:
    """A count of bytes as the legends write it: ``120 bytes``, ``1.5 KiB``, ``2.0 MiB``."""
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def superscript(text: str) -> str:
    """Digits, minus and point as Unicode superscripts: ``"-1"`` -> ``"⁻¹"``."""
    return text.translate(_SUPERSCRIPT)


def format_number(x: float, precision: int = 4) -> str:
    """A number as drawn: ``precision`` significant digits, no trailing zeros.

    ``4`` not ``4.0000``, ``-0.1``, ``1e-05``; a signed zero (the book's
    ``-0.``) is drawn as ``0``, since it compares equal to 0.
    """
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = f"{x:.{precision}g}"
    # Rounding can also produce "-0" (e.g. -1e-9 at 4 digits never does with
    # %g, but -0.0 itself does): a zero has no sign in the picture.
    return "0" if float(text) == 0 else text


def display_number(x: float, precision: int = 4) -> str:
    """``format_number`` as typeset in pictures: a true minus sign (U+2212), not a hyphen."""
    return format_number(x, precision).replace("-", "\u2212")


def drawn_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """An array's shape as it is laid out: without its last axes of length 1 past the
    second, so that a result kept with its pooled axes (a global average pool's
    1×32×1×1) is a row of 32, not 32 matrices of one entry under their indices."""
    shape = tuple(shape)
    while len(shape) > 2 and shape[-1] == 1:
        shape = shape[:-1]
    return shape


def grid_indices(shape: tuple[int, ...], max_items: int = MAX_ITEMS) -> list[list[tuple | str]]:
    """Index tuples laid out as drawn: a vector as a column, a matrix as itself.

    Long axes keep their first and last entries around an ellipsis marker
    ("⋮" for rows, "…" for columns, "⋱" where both are elided).
    """
    def kept(n: int) -> list[int | None]:
        if n <= max_items:
            return list(range(n))
        head = max_items - 2
        return [*range(head), None, n - 1]

    laid = drawn_shape(shape)
    if len(laid) < len(shape):  # (each cell's index has the dropped axes' 0s back)
        kept = (0,) * (len(shape) - len(laid))
        return [[cell if isinstance(cell, str) else (*cell, *kept) for cell in row]
                for row in grid_indices(laid, max_items)]
    if len(shape) > 2:
        # Matrices of the last two axes, each under a row naming its leading
        # indices ("[0,1]"), the middle ones elided past MAX_SLICES.
        leads = list(itertools.product(*(range(n) for n in shape[:-2])))
        if len(leads) > MAX_SLICES:
            leads = [*leads[:MAX_SLICES - 1], None, leads[-1]]
        inner = grid_indices(shape[-2:], max_items)
        blank = [""] * (len(inner[0]) - 1)
        grid: list[list[tuple | str]] = []
        for lead in leads:
            if lead is None:
                grid.append(["⋮", *blank])
                continue
            grid.append([f"[{','.join(map(str, lead))}]", *blank])
            grid.extend([cell if isinstance(cell, str) else (*lead, *cell) for cell in row]
                        for row in inner)
        return grid
    if len(shape) == 0:
        return [[()]]
    if len(shape) == 1:
        return [[(i,)] if i is not None else ["⋮"] for i in kept(shape[0])]
    rows, cols = kept(shape[0]), kept(shape[1])
    grid: list[list[tuple | str]] = []
    for i in rows:
        row: list[tuple | str] = []
        for j in cols:
            if i is None and j is None:
                row.append("⋱")
            elif i is None:
                row.append("⋮")
            elif j is None:
                row.append("…")
            else:
                row.append((i, j))
        grid.append(row)
    return grid


def summarized(shape: tuple[int, ...]) -> bool:
    """Whether an array of ``shape`` is written as its shape and norm (``SUMMARY_ENTRIES``)."""
    return math.prod(shape) > SUMMARY_ENTRIES


def _summary(array: np.ndarray, precision: int) -> list[list[str]]:
    """A large array as written: its shape over its norm, the square root of the sum of
    its entries' squares (the Frobenius norm of a matrix), ``[["64×3×7×7"], ["‖·‖ 5.213"]]``."""
    return [["×".join(map(str, array.shape))], [f"‖·‖ {format_number(norm(array), precision)}"]]


# Each array's norm, by id while the array lives: every picture of a backward pass
# (the page's steps) writes the same gradients again.
_norms: dict[int, tuple[weakref.ref, float]] = {}


def norm(array: np.ndarray) -> float:
    """√(Σ x²) of an array's entries, summed in float64 (the norm a large array is drawn by)."""
    known = _norms.get(id(array))
    if known is not None and known[0]() is array:
        return known[1]
    flat = array.ravel()
    value = math.sqrt(float(np.einsum("i,i->", flat, flat, dtype=np.float64)))
    if len(_norms) > 4096:
        _norms.clear()
    _norms[id(array)] = (weakref.ref(array), value)
    return value


def format_array(x: Any, precision: int = 4, max_items: int = MAX_ITEMS) -> list[list[str]]:
    """A scalar, vector or matrix as a grid of strings, laid out as drawn.

    A scalar is ``[["2"]]``, a vector of n entries a column of n rows, a
    matrix its rows; axes longer than ``max_items`` are elided in the middle.
    An array of three or more axes is its matrices of the last two, each under
    its leading indices (``grid_indices``). An array of more than
    ``SUMMARY_ENTRIES`` entries is its shape over its norm.
    """
    if isinstance(x, np.ndarray) and summarized(x.shape):
        return _summary(x, precision)  # (float32 as it is: the sum is taken in float64)
    array = np.asarray(x, dtype=np.float64)
    if summarized(array.shape):
        return _summary(array, precision)
    return [[cell if isinstance(cell, str) else format_number(array[cell], precision)
             for cell in row] for row in grid_indices(array.shape, max_items)]


def dead_cells(dead: Any, max_items: int = MAX_ITEMS) -> list[list[bool]]:
    """A dead-ReLU mask laid out as ``format_array`` lays out the cells it marks (none
    marked in an array written as its shape and norm)."""
    mask = np.asarray(dead, dtype=bool)
    if summarized(mask.shape):
        return [[False], [False]]
    return [[not isinstance(index, str) and bool(mask[index]) for index in row]
            for row in grid_indices(mask.shape, max_items)]


def changed_note(name: str | None, used: Any, now: Any, precision: int = 4, *,
                 updated: bool = True) -> str:
    """What the picture says of a value changed after the forward pass used it
    (``p.data -= lr * p.grad``): ``w = 2 → 1.94 after the update``; not ``updated``
    (a batch norm's running mean, which the forward pass itself changes): ``after the
    forward pass used it``."""
    who = name or "an unnamed input"
    when, drawn = ("after the update", "drawn as the forward pass used it") if updated else \
        ("after the forward pass used it", "drawn as it was then")
    if np.ndim(used) == 0:
        return (f"{who} = {display_number(float(used), precision)} → "
                f"{display_number(float(now), precision)} {when} ({drawn})")
    return f"{who} changed {when} ({drawn})"


def number_text(x: Any, precision: int = 4) -> str:
    """A recorded number as a worked caption writes it: ``−3``, a vector as the
    column the picture draws (``[1; −2]``), a matrix by rows (``[2, −1; 0, 1]``)."""
    array = np.asarray(x, dtype=np.float64)
    array = array.reshape(drawn_shape(array.shape))  # (a pooled 1×C×1×1: its row of C)
    if array.ndim == 0:
        return display_number(float(array), precision)
    if array.ndim == 1:
        return "[" + "; ".join(display_number(v, precision) for v in array) + "]"
    if array.ndim == 2:
        return "[" + "; ".join(", ".join(display_number(v, precision) for v in row)
                               for row in array) + "]"
    return "[" + "; ".join(number_text(inner, precision) for inner in array) + "]"


def listed(words: list[str] | tuple[str, ...], last: str = "and ") -> str:
    """Words as a sentence lists them: ``a``, ``a and b``, ``a, b and c`` (``last``: what
    goes before the last one, ``and from ``)."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + f" {last}" + words[-1]


def counted_parameters(shapes: list[tuple[int, ...]], numbers: bool = True) -> str:
    """Parameters counted as a lecture counts them: scalars as "41 parameters"; tensors
    as tensors, with the numbers they hold ("12 parameter tensors, 9,344 numbers"), not
    "12 parameters" for what PyTorch counts as 9,344."""
    if all(shape == () for shape in shapes):
        return f"{len(shapes)} parameters"
    held = sum(int(np.prod(shape)) for shape in shapes)
    return f"{len(shapes)} parameter tensors" + (f", {held:,} numbers" if numbers else "")


def held_norm(grads: Any) -> float:
    """The norm of gradients taken together, √(Σ x²) over all their entries (the number
    gradient clipping reads), from each one's norm."""
    return math.sqrt(sum(norm(np.asarray(grad, dtype=np.float64)) ** 2 for grad in grads))


def held_rows(op: dict, precision: int = 4) -> list[tuple[str, str]]:
    """How a module's operator (attributes ``op``) writes the parameters it holds
    (views.py), as (words, gradient) rows: up to NAMED_HELD each by its name and shape
    beside its gradient's norm (a scalar's gradient itself); more, their count beside
    the norm of all their gradients together."""
    names, grads = op["parameter_names"], op["parameter_grads"]
    if len(names) > NAMED_HELD:
        counted = counted_parameters([np.shape(grad) for grad in grads], numbers=False)
        return [(counted, f"‖∇‖ {display_number(held_norm(grads), precision)}")]
    return [(f"{name} {'×'.join(map(str, np.shape(grad)))}".rstrip(),
             f"∇ {display_number(float(grad), precision)}" if not np.shape(grad) else
             f"‖∇‖ {display_number(held_norm([grad]), precision)}")
            for name, grad in zip(names, grads, strict=True)]


def held_lines(op: dict, top: str, precision: int = 4) -> list[str]:
    """A module step's worked lines for the parameters its operator (attributes ``op``)
    holds (views.py): each one's gradient norm (a scalar's gradient itself), or for
    more than two the norm of all their gradients together, as the operator draws them."""
    module, names, grads = op["symbol"], op["parameter_names"], op["parameter_grads"]
    if len(names) > NAMED_HELD:
        counted = counted_parameters([np.shape(grad) for grad in grads])
        return [f"{module}'s {counted} θ: ‖∂{top}/∂θ‖ = "
                f"{display_number(held_norm(grads), precision)}"]
    return [f"∂{top}/∂{module}.{name} = {display_number(float(grad), precision)}"
            if np.ndim(grad) == 0 else
            f"‖∂{top}/∂{module}.{name}‖ = {display_number(held_norm([grad]), precision)}"
            for name, grad in zip(names, grads, strict=True)]
