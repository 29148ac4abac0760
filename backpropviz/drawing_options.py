"""The options of one picture's DOT (dot.Writer's), each checked when made."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .errors import DrawError
from .style import MOST_DIGITS, RANKDIRS, THEMES, Theme

__all__ = ["DotOptions", "dot_options", "folded"]


@dataclass(frozen=True)
class DotOptions:
    rankdir: str
    theme: Theme
    precision: int
    forward_only: bool
    step: int | None
    legend: bool
    show_constants: bool = False
    # Rows (LR, RL) or columns (TB, BT) a long graph is folded into: how many, or
    # the ranks where the second, third... begin.
    wrap: int | tuple[int, ...] = 1
    frame: tuple[int, int] | None = None  # the frame (px) the picture is scaled to fill
    expand: bool = False  # groups drawn open, each in a box, rather than as one op
    symbolic: bool = False  # names only, no numbers, as the book's figures are
    # Set in a frame's type (FITTED_TYPE): given a frame, and kept by the
    # drafts a folded or book-style picture is pinned from, which have none.
    fitted: bool = False
    # What untangling.py tells dot, to undo a crossing of its own layout: ops whose
    # operands may lie in any order, and values each ranked after another.
    free_order: frozenset[str] = frozenset()
    ranked_after: tuple[tuple[str, str], ...] = ()


def dot_options(rankdir: str = "LR", theme: str = "light", precision: int = 4,
             forward_only: bool = False, step: int | None = None, legend: bool = True,
             show_constants: bool = False, wrap: int | Sequence[int] = 1,
             frame: tuple[int, int] | None = None, expand: bool = False,
             symbolic: bool = False) -> DotOptions:
    """The drawing options, each checked: every mistake is one DrawError."""
    if rankdir not in RANKDIRS:
        raise DrawError(f"unknown rankdir: {rankdir!r} (must be one of {list(RANKDIRS)})")
    if theme not in THEMES:
        raise DrawError(f"unknown theme: {theme!r} (must be one of {sorted(THEMES)})")
    if isinstance(precision, bool) or not isinstance(precision, int) \
            or not 1 <= precision <= MOST_DIGITS:
        raise DrawError(f"precision must be an int of significant digits, 1 to {MOST_DIGITS}, "
                        f"got {precision!r}")
    if not isinstance(wrap, int):
        wrap = tuple(sorted(set(wrap)))
        if not all(isinstance(cut, int) and cut > 0 for cut in wrap):
            raise DrawError(f"wrap is a number of rows or the ranks where rows begin "
                            f"(positive ints), got {wrap!r}")
    elif isinstance(wrap, bool) or wrap < 1:
        raise DrawError(f"wrap must be a positive number of rows, got {wrap!r}")
    return DotOptions(rankdir, THEMES[theme], precision, forward_only, step, legend,
                    show_constants, wrap, frame, expand, symbolic, frame is not None)


def folded(options: DotOptions) -> bool:
    return bool(options.wrap) if isinstance(options.wrap, tuple) else options.wrap > 1
