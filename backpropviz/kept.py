"""What backpropviz makes again and again, kept on disk for the next run to read back.

A lecturer renders the same script many times over: a theme tried, an output
format changed, a clip rendered again after its figure. Each of those lays out
the same drafts with graphviz (some 20-100 ms a run, a dozen runs for a page)
and, for a clip, sets the same texts with Pango. Kept keeps such results under
a name hashed from everything that shapes them, and hands them back whole or
not at all: each file ends with the hash of what it holds, so a torn or
foreign file is as if there were none.

The folder is ``$BACKPROPVIZ_CACHE`` (an empty value keeps nothing on disk),
else ``$XDG_CACHE_HOME/backpropviz`` or ``~/.cache/backpropviz``, one folder a
kind, only its user can write to it. A file that cannot be read or written is
as if there were none; past a kind's most files or bytes, its older half is
removed.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import tempfile
import time

__all__ = ["Kept", "folder"]

_CHECK = 32  # (a file's last bytes: the sha256 of the rest)
_TORN = 3600  # (a file being written for this many seconds was left torn)


def folder(kind: str) -> pathlib.Path | None:
    """Where the files of ``kind`` are kept; None when ``$BACKPROPVIZ_CACHE`` is set
    empty (or there is no home to keep them in)."""
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
    return base / kind


class Kept:
    """The files of one kind (``kind``, a folder's name: bump its version when what is
    kept changes), each named by its key and ``salt`` (what shapes every entry: the
    versions of the programs that made it). Past ``most`` files or ``most_bytes``,
    the older half goes (checked once a process for each folder, at its first keep).

    The folder is looked up at each use, not once: a Kept may be made once and held
    (graphviz keeps one for each program) while ``$BACKPROPVIZ_CACHE`` changes.
    """

    def __init__(self, kind: str, salt: str, *, most: int, most_bytes: int) -> None:
        self._kind = kind
        self._salt = salt
        self._most = most
        self._most_bytes = most_bytes
        self._pruned: set[pathlib.Path] = set()

    @property
    def folder(self) -> pathlib.Path | None:
        return folder(self._kind)

    def path(self, key: str) -> pathlib.Path:
        where = self.folder
        assert where is not None
        return self._path(where, key)

    def _path(self, where: pathlib.Path, key: str) -> pathlib.Path:
        digest = hashlib.sha256(f"{self._salt}\0{key}".encode()).hexdigest()
        return where / f"{digest}.kept"

    def get(self, key: str) -> bytes | None:
        """What is kept for ``key``, or None (none kept, unreadable, or not whole)."""
        where = self.folder
        if where is None:
            return None
        try:
            held = self._path(where, key).read_bytes()
        except OSError:
            return None
        data, check = held[:-_CHECK], held[-_CHECK:]
        return data if hashlib.sha256(data).digest() == check else None

    def put(self, key: str, data: bytes) -> None:
        """Keep ``data`` for ``key``, whole or not at all (a full or read-only disk:
        it is made again next time)."""
        where = self.folder
        if where is None:
            return
        try:
            where.mkdir(mode=0o700, parents=True, exist_ok=True)
            if where not in self._pruned:
                self._pruned.add(where)
                _prune(where, self._most, self._most_bytes)
            handle, temporary = tempfile.mkstemp(dir=where, suffix=".part")
            try:
                with os.fdopen(handle, "wb") as file:
                    file.write(data)
                    file.write(hashlib.sha256(data).digest())
                os.replace(temporary, self._path(where, key))
            except BaseException:
                pathlib.Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            pass


def _prune(where: pathlib.Path, most: int, most_bytes: int) -> None:
    """Past ``most`` files or ``most_bytes`` kept, remove the older half (and any
    file a writer left torn: one another process is writing now is left to it)."""
    entries = list(os.scandir(where))
    kept = []
    for entry in entries:
        if entry.name.endswith(".part") and entry.stat().st_mtime < time.time() - _TORN:
            pathlib.Path(entry.path).unlink(missing_ok=True)
        elif entry.name.endswith(".kept"):
            kept.append((entry.stat().st_mtime, entry.stat().st_size, entry.path))
    if len(kept) <= most and sum(size for _, size, _ in kept) <= most_bytes:
        return
    kept.sort()
    for _, _, path in kept[:len(kept) // 2]:
        pathlib.Path(path).unlink(missing_ok=True)
