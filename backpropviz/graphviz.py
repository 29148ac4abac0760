"""Running graphviz: ``dot`` under a time limit, its formats, and its SVG made portable."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

import networkx as nx

from .errors import DrawError
from .kept import Kept
from .options import DEFAULT_DOT_TIMEOUT

__all__ = [
    "DEFAULT_DOT_TIMEOUT",
    "FORMATS",
    "PIECES_PER_MINUTE",
    "SUBSCRIPT_SCALE",
    "DotTimeoutError",
    "check_layout",
    "dot_time_limit",
    "layout_json",
    "layout_pieces",
    "pieces_past_limit",
    "portable_svg",
    "require_dot",
    "run_dot",
]


# The folder of what dot and neato wrote (kept.Kept): bump it when what is kept changes.
KEPT_KIND = "graphviz-1"

# Folders written again when a font is installed (fontconfig's caches, a user's fonts):
# what dot measures text with.
FONT_FOLDERS = ("/var/cache/fontconfig", "~/.cache/fontconfig", "~/.fonts",
                "~/.local/share/fonts")

# The graphviz output formats we offer (all in every graphviz build with cairo).
FORMATS = ("bmp", "canon", "dot", "gif", "gv", "jpeg", "jpg", "json", "pdf", "plain",
           "png", "ps", "svg", "tif", "tiff", "xdot")


# ---------------------------------------------------------------- rendering


# How long dot may take to lay out one picture (options.DEFAULT_DOT_TIMEOUT
# unless set): past this it is stopped and the drawing refused with advice,
# so that nothing hangs.
_dot_timeout: ContextVar[float] = ContextVar("dot_timeout", default=DEFAULT_DOT_TIMEOUT)


class DotTimeoutError(DrawError):
    """dot did not finish a layout within the time limit."""


@contextmanager
def dot_time_limit(seconds: float) -> Iterator[None]:
    """Within the block, every ``dot`` run is stopped after ``seconds``."""
    token = _dot_timeout.set(seconds)
    try:
        yield
    finally:
        _dot_timeout.reset(token)


# dot splits an edge that spans k ranks into k pieces and orders them all;
# measured (bench/render.py), 90,000 pieces take about 20 s, 800,000 minutes.
# Past this many per minute of the time limit a drawing is refused at once.
PIECES_PER_MINUTE = 200_000


def layout_pieces(G: nx.MultiDiGraph) -> int:
    """How many edge pieces dot will lay out: each edge's span in ranks (depth from
    the inputs), less one, summed. A parameter used at every step of an unrolled
    loop spans the whole loop, again and again."""
    depth: dict[Any, int] = {}
    for node in nx.topological_sort(G):
        depth[node] = max((depth[u] + 1 for u in G._pred[node]), default=0)
    return sum(max(0, depth[v] - depth[u] - 1) for u, v in G.edges())


def pieces_past_limit(G: nx.MultiDiGraph) -> int | None:
    """The edge pieces of ``G`` (layout_pieces) if dot cannot lay them out within the time
    limit; None if it can."""
    pieces = layout_pieces(G)
    return pieces if pieces > PIECES_PER_MINUTE * _dot_timeout.get() / 60 else None


def check_layout(G: nx.MultiDiGraph) -> None:
    """DrawError, at once, for a graph dot cannot lay out within the time limit."""
    pieces = pieces_past_limit(G)
    if pieces is not None:
        raise DrawError(
            f"graphviz would need minutes for this graph: its edges span {pieces:,} ranks in "
            "all (a value used by ops far apart, such as a weight shared by every step of an "
            "unrolled loop); draw fewer steps, name a ROOT nearer the output, or give dot "
            f"longer with --timeout (now {_dot_timeout.get():g} s)")


_NO_DOT = ("failed to execute 'dot', make sure the Graphviz executables are on your PATH "
           "(on Debian: apt-get install graphviz)")


def require_dot() -> None:
    """DrawError now, rather than after a script has run, if ``dot`` cannot be found."""
    if shutil.which("dot") is None:
        raise DrawError(_NO_DOT)


def run_dot(source: str, format: str = "svg") -> bytes:
    """Lay out and render DOT text with the ``dot`` executable, within the time limit;
    what it wrote for the same DOT and format before, with the same graphviz and
    fonts, is read back (kept.Kept) rather than laid out again.

    On a terminal, a run that takes more than a few seconds says how long it
    has been going; one that reaches the limit is stopped (DrawError).
    """
    if format not in FORMATS:
        raise DrawError(f"unknown format: {format!r} (must be one of {list(FORMATS)})")
    # A folded picture has its places in the DOT: neato -n2 keeps them.
    command = ["neato", "-n2"] if 'layout="neato"' in source[:2000] else ["dot"]
    command.append(f"-T{format}")
    kept = _kept_layouts(command[0])
    key = f"{' '.join(command)}\n{source}"
    drawn = kept.get(key) if kept is not None else None
    if drawn is None:
        drawn = _run(command, source)
        if kept is not None:
            kept.put(key, drawn)
    return drawn


def _kept_layouts(program: str) -> Kept | None:
    """Where what ``program`` (dot, neato) wrote is kept, for the graphviz installed
    now and the fonts it measures text with; None when it is not to be found."""
    found = shutil.which(program)
    return None if found is None else _kept_for(os.path.realpath(found))


@lru_cache(maxsize=4)
def _kept_for(program: str) -> Kept:
    # What shapes graphviz's output besides its input: its program and plugins (their
    # config file is written again when either changes) and the fonts fontconfig knows.
    lib = os.path.join(os.path.dirname(program), "..", "lib")
    shaping = [program, *glob.glob(os.path.join(lib, "*", "graphviz", "config*")),
               *glob.glob(os.path.join(lib, "graphviz", "config*")),
               *map(os.path.expanduser, FONT_FOLDERS)]
    stamps = []
    for path in shaping:
        try:
            stamp = os.stat(path)
        except OSError:
            continue
        stamps.append(f"{os.path.normpath(path)} {stamp.st_size} {stamp.st_mtime_ns}")
    return Kept(KEPT_KIND, "\n".join(stamps), most=5000, most_bytes=300_000_000)


def _run(command: list[str], source: str) -> bytes:
    """What ``command`` (dot or neato with its format) writes for ``source``."""
    limit = _dot_timeout.get()
    # The DOT and the picture pass through unnamed files, not pipes: dot reads its
    # input and writes its output without waiting for us, and we wait without
    # waking for each piece (a 900 KB DOT and its 2 MB SVG: half the time spent
    # here). We wait on dot's messages, which end when it does.
    with ExitStack() as files:
        try:
            given = files.enter_context(tempfile.TemporaryFile())
            drawn = files.enter_context(tempfile.TemporaryFile())
            given.write(source.encode("utf-8"))
            given.seek(0)
        except OSError as error:
            raise DrawError(f"cannot write the temporary files dot reads and writes "
                            f"({error.strerror}); set TMPDIR to a folder with room") from None
        try:
            process = subprocess.Popen(command, stdin=given, stdout=drawn,
                                       stderr=subprocess.PIPE)
        except FileNotFoundError:
            raise DrawError(_NO_DOT) from None
        err = _waited(process, limit)
        if process.returncode != 0:
            message = err.decode("utf-8", "replace").strip().splitlines()
            raise DrawError(f"dot failed with exit status {process.returncode}: "
                            f"{message[0] if message else 'no message'}")
        drawn.seek(0)
        return drawn.read()


def _waited(process: subprocess.Popen, limit: float) -> bytes:
    """What ``process`` wrote to stderr, once it has ended; stopped at ``limit`` seconds
    (DotTimeoutError), and on a terminal saying how long it has been going after 3."""
    start = time.monotonic()
    shown = False
    try:
        while True:
            waited = time.monotonic() - start
            try:
                return process.communicate(timeout=max(0.05, min(1.0, limit - waited)))[1]
            except subprocess.TimeoutExpired:
                waited = time.monotonic() - start
                if waited >= limit:
                    raise DotTimeoutError(
                        f"dot did not finish the layout within {limit:g} s, so it was stopped; "
                        "draw a smaller graph (name a ROOT nearer the inputs, or fewer steps "
                        "of a loop), or give it longer with --timeout") from None
                if waited > 3 and sys.stderr.isatty():
                    sys.stderr.write(f"\rlaying out with dot: {waited:.0f} s "
                                     f"(stopped at {limit:g} s)")
                    sys.stderr.flush()
                    shown = True
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        if shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


# A subscript's size, of its name's.
SUBSCRIPT_SCALE = 0.72
_SUBSCRIPT = re.compile(rb'<text ([^>]*?)y="(-?[0-9.]+)"([^>]*?) baseline-shift="sub" '
                        rb'font-size="([0-9.]+)"')


# The picture's scale as graphviz writes it (to two decimals), and the
# background it fills: the drawing with its pad, in the picture's own points.
_SCALE = re.compile(rb'viewBox="0\.00 0\.00 ([0-9.]+) ([0-9.]+)"(.*?)transform="scale\('
                    rb'([0-9.]+) ([0-9.]+)\)(.*?)<polygon [^>]*?points="([^"]+)"', re.S)


@lru_cache(maxsize=32)
def layout_json(source: str) -> dict:
    """dot's layout of ``source`` (``dot -Tjson``), parsed, for reading only: the
    same draft is laid out when it is measured, untangled and pinned."""
    return json.loads(run_dot(source, "json"))


def portable_svg(svg: bytes) -> bytes:
    """graphviz's SVG, with its subscripts (W₁) set lower and smaller in plain
    coordinates: cairosvg and other converters ignore ``baseline-shift``; and
    scaled exactly (graphviz rounds the scale to two decimals, which lets a
    picture scaled to a frame run up to half a percent past its edge)."""
    def lowered(match: re.Match) -> bytes:
        size = float(match.group(4))
        y = float(match.group(2)) + 0.3 * size
        return (b"<text " + match.group(1) + b'y="' + f"{y:.2f}".encode() + b'"'
                + match.group(3) + b' font-size="' + f"{SUBSCRIPT_SCALE * size:.2f}".encode()
                + b'"')

    match = _SCALE.search(svg)
    if match is not None and match.group(4) != b"1":  # (unscaled, the text is left as it is)
        points = [tuple(map(float, p.split(b","))) for p in match.group(7).split()]
        xs, ys = [x for x, _ in points], [y for _, y in points]
        width, height = max(xs) - min(xs), max(ys) - min(ys)
        if width and height:
            scale = min(float(match.group(1)) / width, float(match.group(2)) / height)
            text = f"{scale:.5f}".encode()
            svg = svg[:match.start(4)] + text + b" " + text + svg[match.end(5):]
    # (a quick look first: scanning every text of a big picture takes milliseconds)
    return _SUBSCRIPT.sub(lowered, svg) if b'baseline-shift="sub"' in svg else svg
