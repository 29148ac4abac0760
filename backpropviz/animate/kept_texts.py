"""The texts clips have made, kept on disk for the next clip to read back.

Making a text runs Pango (or LaTeX) and parses the SVG it writes: 20-50 ms
each, a fifth of a short clip's time, the same numbers and names again each
time a lecturer renders the clip after a change. TextStore keeps each text it
makes here as well (kept.Kept, in the folder "texts-3"), pickled, under a name
hashed from everything that shapes it (its content, size, colour, faces, and
the versions of manim and its Pango binding), and reads it back in well under
a millisecond. Its entries are pickles this process or an earlier one wrote,
in a folder only its user can write, each checked whole before it is read.
"""

from __future__ import annotations

import pathlib
from typing import Any

from ..kept import Kept
from ..kept import folder as kept_folder

__all__ = ["KeptTexts", "folder"]

# The layout of an entry: bump it when what TextStore pickles changes.
KIND = "texts-3"
MOST = 3000  # (a text takes some 30 KB: about 100 MB at most)


def folder() -> pathlib.Path | None:
    """Where the texts are kept; None when ``$BACKPROPVIZ_CACHE`` is set empty."""
    return kept_folder(KIND)


class KeptTexts(Kept):
    """The texts on disk made with one set of faces (``faces``: anything that shapes
    every text, as its repr); a text's key is anything with a repr that tells it."""

    def __init__(self, faces: Any) -> None:
        import manim
        import manimpango

        super().__init__(KIND, repr((faces, manim.__version__, manimpango.__version__)),
                         most=MOST, most_bytes=MOST * 100_000)

    def get(self, key: Any) -> bytes | None:
        """The pickled text kept for ``key``, or None (none kept, or not whole)."""
        return super().get(repr(key))

    def put(self, key: Any, data: bytes) -> None:
        """Keep ``data`` (a pickled text) for ``key``, whole or not at all."""
        super().put(repr(key), data)
