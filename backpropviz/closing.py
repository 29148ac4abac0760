"""A rolled loop's closing step in words and numbers: the repetitions not drawn add their shares.

A rolled view (rolling.py) sweeps one repetition of a loop's block; the
shared weights' gradients are then the engine's sum so far. Its closing step
sets each to the gradient the engine held once the repetitions backward reached
after the drawn one had sent theirs (``loop_rest``), and its caption writes
that sum with the engine's numbers: the sum so far, each share as backward sent
it (``loop_shares``), and the result; too many shares to write are counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .formatting import listed, number_text
from .worked import as_written, exactly

__all__ = ["WRITTEN_SHARES", "came_first", "closing_line", "closing_rule", "closing_text",
           "repetitions"]

# The most shares a closing step's worked line writes out, one by one, and the most
# numbers it writes so (its sum so far, the shares, the result: entries of arrays
# counted); past them the shares are counted.
WRITTEN_SHARES = 4
WRITTEN_NUMBERS = 24
# The most entries of an array it writes at all (more are read on the picture's boxes).
WRITTEN_ENTRIES = 12


def repetitions(shares: Sequence[Sequence[Any]]) -> str:
    """Where shares came from, as a caption says it: ``repetitions 4 to 1``,
    ``repetition 1``, ``repetitions 5, 3 and 1``, ``a use outside the loop``."""
    counted = list(dict.fromkeys(t for t, _ in shares if t))
    outside = sum(1 for t, _ in shares if not t)
    said = []
    if len(counted) == 1:
        said.append(f"repetition {counted[0]}")
    elif len(counted) > 2 and counted == list(range(counted[0], counted[-1] - 1, -1)):
        said.append(f"repetitions {counted[0]} to {counted[-1]}")
    elif counted:
        said.append(f"repetitions {', '.join(map(str, counted[:-1]))} and {counted[-1]}")
    if outside:
        said.append("a use outside the loop" if outside == 1
                    else f"{outside} uses outside the loop")
    return " and ".join(said)


def came_first(sources: Mapping[str, Sequence[int]]) -> str:
    """What a rolled loop's shared values hold as the drawn repetition's sweep begins, by
    name: the repetitions whose shares each sum holds, in the order backward sent them
    (every later one, or in an order that mixes them, some of them): ``repetitions 4 to
    2, which backward reached first, sent their shares to w already``."""
    by_source: dict[tuple, list[str]] = {}
    for name, came in sources.items():
        by_source.setdefault(tuple(came), []).append(name)
    return "; ".join(
        f"{repetitions([[t, None] for t in came])}, which backward reached first, sent "
        f"{'its share' if len(came) == 1 else 'their shares'} to "
        f"{listed(names)} already" for came, names in by_source.items())


def closing_text(left: str, shares: Sequence[Sequence[Any]]) -> str:
    """The closing step's equation for one shared value, ``left`` its ∂L/∂w."""
    return f"{left} += the {_counted(len(shares))} of {repetitions(shares)}"


def closing_line(left: str, before: Any, shares: Sequence[Sequence[Any]], after: Any,
                 precision: int) -> str:
    """The worked line of one shared value: its sum so far (``before``, None if it had
    none) plus each share gives ``after``, written with the engine's numbers; ``=``
    where the numbers as written add up to it exactly, else ``≈``. More shares than
    WRITTEN_SHARES (or numbers than WRITTEN_NUMBERS) are counted, not written; a large
    array's numbers are left to the picture."""
    terms = [share for _, share in shares]
    numbers = ([] if before is None else [before]) + terms
    if any(np.size(x) > WRITTEN_ENTRIES for x in [*numbers, after]):
        return f"{left} += the {_counted(len(terms))} of {repetitions(shares)}"
    written = [number_text(before, precision)] if before is not None else []
    if len(terms) > WRITTEN_SHARES or sum(map(np.size, [*numbers, after])) > WRITTEN_NUMBERS:
        counted = f"the {_counted(len(terms))} of {repetitions(shares)}"
        return f"{left} = {' + '.join([*written, counted])} = {number_text(after, precision)}"
    written += [_factor(share, precision) for share in terms]
    total = np.sum([as_written(x, precision) for x in numbers], axis=0)
    sign = " = " if exactly(total, as_written(after, precision)) else " ≈ "
    return f"{left} = {' + '.join(written)}{sign}{number_text(after, precision)}"


def closing_rule(shares: Mapping[Any, Sequence[Sequence[Any]]], count: int | None,
                 named: Sequence[str], mixed: bool = False) -> str:
    """The closing step's rule in words: whose shares add to the shared values' gradients
    (``shares`` of each, ``named`` as the caption names them, in that order), and what
    they are then; ``mixed``: backward sent some of them while it swept the drawn
    repetition. Values whose shares come from different repetitions are said apart (a
    sum already said to hold a repetition's share is not said to get it again)."""
    groups: dict[tuple, list[str]] = {}
    for pairs, name in zip(shares.values(), named, strict=True):
        sources = tuple(sorted({t for t, _ in pairs if t}, reverse=True))
        groups.setdefault((sources, sum(1 for t, _ in pairs if not t)), []).append(name)
    every = f"all {count} repetitions'" if count else "every repetition's"
    when = ("reached while it swept the drawn one or after it" if mixed
            else "reaches after the drawn one")
    said = []
    for (sources, outside), names in groups.items():
        whose = repetitions([[t, None] for t in sources] + [[0, None]] * outside)
        one = len(sources) + outside == 1
        said.append(f"{whose}{f', which backward {when},' if not said else ''} "
                    f"add{'s its share' if one else ' their shares'} to the "
                    f"gradient{'s' if len(names) > 1 else ''} of {listed(names)}")
    rule = "; ".join(said)
    return (f"{rule[0].upper()}{rule[1:]} (+=): now "
            f"{'each holds' if len(named) > 1 else 'it holds'} {every} shares, as .grad does")


def _counted(n: int) -> str:
    return "share" if n == 1 else f"{n} shares"


def _factor(x: Any, precision: int) -> str:
    """A number as a term of a sum: a negative scalar in parentheses, ``(−3)``."""
    text = number_text(x, precision)
    return f"({text})" if text.startswith("−") else text
