"""Output on disk whole or not at all: every file backpropviz writes goes through here."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import OutputError

__all__ = ["make_folder", "move_into_place", "require_writable", "require_writable_folder",
           "staged_folder", "write_atomically"]


def write_atomically(path: str | os.PathLike, data: bytes) -> Path:
    """Write to a temporary file beside ``path``, then rename it; return ``path``.

    A failed or interrupted write leaves nothing at ``path`` (and an earlier
    file there as it was). Raises OutputError.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise _output_error(path, error) from None
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        # mkstemp makes the file private (0600); give it the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise _output_error(path, error) from None
        raise
    return path


def move_into_place(source: Path, target: Path) -> Path:
    """Move a finished file to ``target``; a half-copied file never has the final name."""
    partial = target.with_name(f".{target.name}.part")
    try:
        shutil.move(source, partial)
        os.replace(partial, target)
    except OSError as error:
        raise _output_error(target, error) from None
    finally:
        partial.unlink(missing_ok=True)
    return target


def make_folder(directory: str | os.PathLike) -> Path:
    """``directory`` and its parents, made if missing; raises OutputError."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _output_error(directory, error) from None
    return directory


@contextlib.contextmanager
def staged_folder(directory: Path, stale: str) -> Iterator[Path]:
    """A scratch folder inside ``directory`` whose files move in only if the block succeeds.

    Files in ``directory`` that match the glob ``stale`` and were not just
    written are removed then (frames of an earlier, longer run). On failure
    nothing in ``directory`` changes, and a ``directory`` this made is removed.
    """
    created = not directory.exists()
    make_folder(directory)
    try:
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=directory))
    except OSError as error:
        raise _output_error(directory, error) from None
    try:
        yield staging
        written = sorted(staging.iterdir())
        for path in written:
            os.replace(path, directory / path.name)
        current = {path.name for path in written}
        for old in directory.glob(stale):
            if old.name not in current:
                old.unlink()
    except BaseException as error:
        shutil.rmtree(staging, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                directory.rmdir()  # only if still empty: never remove what was there
        if isinstance(error, OSError):
            raise _output_error(directory, error) from None
        raise
    shutil.rmtree(staging)


def _output_error(path: Path, error: OSError) -> OutputError:
    return OutputError(f"cannot write {path}: {error.strerror or error}")


def require_writable(path: str | os.PathLike) -> None:
    """OutputError now, before a script runs rather than after, if ``path`` cannot be
    written."""
    path = Path(path)
    folder = path.parent
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: no such directory {str(folder)!r}")
    if not os.access(folder, os.W_OK):
        raise OutputError(f"cannot write {path}: permission denied")


def require_writable_folder(directory: str | os.PathLike, what: str = "steps") -> None:
    """OutputError now if ``what`` cannot be written into the folder ``directory``
    (made if missing)."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise OutputError(f"cannot write {what} into {directory}: it is not a directory")
    existing = next((p for p in (directory, *directory.parents) if p.exists()), Path("."))
    if not os.access(existing, os.W_OK):
        raise OutputError(f"cannot write {what} into {directory}: permission denied")
