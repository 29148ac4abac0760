"""What a clip can be (formats, passes, qualities, size) and the checks that refuse the rest."""

from __future__ import annotations

import importlib.util
import os
import pathlib

import networkx as nx

from ..errors import BackpropvizError
from ..style import THEMES

__all__ = ["FORMATS", "MAX_NODES", "PHASES", "QUALITIES", "TRANSPARENT_FORMATS", "AnimateError",
           "check_format", "check_size", "check_video", "require_manim"]

FORMATS = (".mp4", ".gif", ".webm", ".mov")
# The formats whose video has an alpha channel, for a theme on no background.
TRANSPARENT_FORMATS = (".webm", ".mov")
PHASES = ("forward", "backward", "both")
# The CLI's quality letters, as manim's ``-q`` flag means them.
QUALITIES = {"l": "low_quality", "m": "medium_quality", "h": "high_quality",
             "p": "production_quality", "k": "fourk_quality"}
# Past about this many IR nodes the boxes get too small to read at 1080p and
# the clip too long to watch; the Tensor form of the same network is smaller.
MAX_NODES = 60


class AnimateError(BackpropvizError, ValueError):
    """A clip that cannot be rendered, explained in one sentence."""


def check_format(path: str | os.PathLike) -> str:
    """The video format of ``path`` (its suffix), or AnimateError listing the formats."""
    suffix = pathlib.Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise AnimateError(f"unknown video format: {suffix or str(path)!r} "
                           f"(must be one of {list(FORMATS)})")
    return suffix


def check_video(theme: str, fmt: str) -> None:
    """AnimateError unless a clip in ``theme`` can be written as ``fmt`` ("webm" or ".webm").

    A theme on no background (its ``background`` is "transparent") needs a
    format with an alpha channel. The command line calls this before it runs
    a script, so that what ``render_video`` would refuse is refused first.
    """
    if theme not in THEMES:
        raise AnimateError(f"unknown theme: {theme!r} (must be one of {list(THEMES)})")
    suffix = "." + fmt.lower().lstrip(".")
    if THEMES[theme].transparent and suffix not in TRANSPARENT_FORMATS:
        raise AnimateError(f"--theme {theme} needs a video format with an alpha channel "
                           f"({', '.join(TRANSPARENT_FORMATS)}), not {suffix}")


def check_size(G: nx.MultiDiGraph, max_nodes: int = MAX_NODES) -> None:
    """AnimateError when ``G`` has more nodes than a readable clip can show."""
    if G.number_of_nodes() > max_nodes:
        raise AnimateError(
            f"the graph has {G.number_of_nodes()} nodes, more than the animation limit of "
            f"{max_nodes}; build it from Tensor operations (the matrix form) to animate it, "
            "or raise max_nodes")


def require_manim() -> None:
    """AnimateError unless manim can be imported."""
    if importlib.util.find_spec("manim") is None:
        raise AnimateError("animating needs manim, which is not installed; "
                           "install it with: pip install 'backpropviz[video]'")
