"""What a clip can be (formats, passes, qualities, size) and the checks that refuse the rest."""

from __future__ import annotations

import importlib.util
import os
import pathlib
from typing import TYPE_CHECKING

from ..errors import BackpropvizError
from ..options import (
    ALPHA_FORMATS,
    CLIP,
    CLIP_MAX_NODES,
    KINDS,
    PHASES,
    QUALITIES,
    alpha_refusal,
)
from ..style import THEMES

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["FORMATS", "MAX_NODES", "PHASES", "QUALITIES", "TRANSPARENT_FORMATS", "AnimateError",
           "check_format", "check_size", "check_video", "require_manim"]

# The clip's formats (those with an alpha channel too, for a theme on no
# background) as suffixes; what a user may ask for is declared with the options.
FORMATS = tuple(f".{fmt}" for fmt in KINDS[CLIP])
TRANSPARENT_FORMATS = tuple(f".{fmt}" for fmt in ALPHA_FORMATS)
MAX_NODES = CLIP_MAX_NODES  # the clip's size limit, declared with the options


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
    refusal = alpha_refusal(theme, fmt)
    if refusal:
        raise AnimateError(refusal)


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
