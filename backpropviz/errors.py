"""The library's errors: one base class, so a caller (the CLI) can catch them all at once.

Each module raises its own subclass, with a message of one sentence that
names the problem and, where there is one, the fix.
"""

from __future__ import annotations

__all__ = ["BackpropvizError", "DrawError", "Note", "OutputError", "UsageError"]


class BackpropvizError(Exception):
    """Something backpropviz cannot do, explained in one sentence."""


class OutputError(BackpropvizError):
    """A file or folder that could not be written."""


class DrawError(BackpropvizError):
    """Why a graph could not be drawn or rendered, in one sentence."""


class UsageError(BackpropvizError):
    """Options that cannot be used, or not together (the command line exits with 2)."""


class Note(UserWarning):
    """Something worth knowing about an output that was made (e.g. a figure too
    small to read in its frame); the command line prints it as a note."""
