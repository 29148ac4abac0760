"""The library's errors: one base class, so a caller (the CLI) can catch them all at once.

Each module raises its own subclass, with a message of one sentence that
names the problem and, where there is one, the fix.
"""

from __future__ import annotations

__all__ = ["BackpropvizError", "DrawError", "OutputError"]


class BackpropvizError(Exception):
    """Something backpropviz cannot do, explained in one sentence."""


class OutputError(BackpropvizError):
    """A file or folder that could not be written."""


class DrawError(BackpropvizError):
    """Why a graph could not be drawn or rendered, in one sentence."""
