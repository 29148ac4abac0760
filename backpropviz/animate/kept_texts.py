"""The texts clips have made, kept on disk for the next clip to read back.

Making a text runs Pango (or LaTeX) and parses the SVG it writes: 20-50 ms
each, a fifth of a short clip's time, the same numbers and names again each
time a lecturer renders the clip after a change. TextStore keeps each text it
makes here as well, under a name hashed from everything that shapes it (its
content, size, colour, faces, and the versions of manim and its Pango
binding), and reads it back in well under a millisecond.

The folder is ``$BACKPROPVIZ_CACHE`` (an empty value keeps nothing on disk),
else ``$XDG_CACHE_HOME/backpropviz`` or ``~/.cache/backpropviz``; its entries
are pickles this process or an earlier one wrote, in a folder only its user
can write. A file that cannot be read or written is as if there were none;
past ``MOST`` texts, the older half is removed.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import pickle
import tempfile
from typing import Any

__all__ = ["KeptTexts"]

# The layout of an entry: bump it when what TextStore pickles changes.
VERSION = 2
MOST = 3000  # (a text takes some 30 KB: about 100 MB at most)


def folder() -> pathlib.Path | None:
    """Where the texts are kept; None when ``$BACKPROPVIZ_CACHE`` is set empty."""
    chosen = os.environ.get("BACKPROPVIZ_CACHE")
    if chosen == "":
        return None
    if chosen:
        base = pathlib.Path(chosen)
    else:
        try:
            home = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
        except RuntimeError:  # (no home to be found: nothing kept)
            return None
        base = pathlib.Path(home) / "backpropviz"
    return base / f"texts-{VERSION}"


class KeptTexts:
    """The texts on disk made with one set of faces (``faces``: anything that shapes
    every text, as its repr)."""

    def __init__(self, faces: Any) -> None:
        import manim
        import manimpango

        self.folder = folder()
        self._salt = repr((faces, manim.__version__, manimpango.__version__, VERSION))
        self._pruned = False

    def _path(self, key: Any) -> pathlib.Path:
        assert self.folder is not None
        digest = hashlib.sha256((self._salt + repr(key)).encode("utf-8")).hexdigest()
        return self.folder / f"{digest}.pickle"

    def get(self, key: Any) -> bytes | None:
        """The pickled text kept for ``key``, or None (none kept, or unreadable)."""
        if self.folder is None:
            return None
        try:
            data = self._path(key).read_bytes()
            pickle.loads(data)  # (a torn or stale file is rebuilt, not handed out)
        except Exception:  # any: a file that cannot be read back is not kept
            return None
        return data

    def put(self, key: Any, data: bytes) -> None:
        """Keep ``data`` (a pickled text) for ``key``, whole or not at all."""
        if self.folder is None:
            return
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not self._pruned:
                self._pruned = True
                _prune(self.folder)
            handle, temporary = tempfile.mkstemp(dir=self.folder, suffix=".part")
            try:
                with os.fdopen(handle, "wb") as file:
                    file.write(data)
                os.replace(temporary, self._path(key))
            except BaseException:
                pathlib.Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            pass  # (a full or read-only disk: the text is made again next time)


def _prune(where: pathlib.Path) -> None:
    """Past MOST texts kept, remove the older half (and any file a writer left torn)."""
    entries = list(os.scandir(where))
    for entry in entries:
        if entry.name.endswith(".part"):
            pathlib.Path(entry.path).unlink(missing_ok=True)
    texts = [entry for entry in entries if entry.name.endswith(".pickle")]
    if len(texts) <= MOST:
        return
    texts.sort(key=lambda entry: entry.stat().st_mtime)
    for entry in texts[:len(texts) // 2]:
        pathlib.Path(entry.path).unlink(missing_ok=True)
