"""Animate the backward pass with manim: reusable mobjects and scenes, and a video render.

``render_video(G, "sweep.mp4")`` writes the whole clip (and ``sweep.srt``).
For your own scenes, subclass ``BackpropScene`` and call its parts::

    class Sweep(BackpropScene):
        example = "examples/d2l_mlp.py"
        roots = ("L",)
        phase = "backward"

Importing this package does not import manim: ``render_video`` loads it when
it runs, and ``BackpropScene`` and ``GraphMobject`` when first looked up.
"""

from __future__ import annotations

from typing import Any

from .formats import FORMATS, MAX_NODES, PHASES, QUALITIES, AnimateError, check_video
from .render import render_video

__all__ = [
    "FORMATS",
    "MAX_NODES",
    "PHASES",
    "QUALITIES",
    "AnimateError",
    "BackpropScene",
    "GraphMobject",
    "check_video",
    "render_video",
]

_LAZY = {"BackpropScene": "sweep", "GraphMobject": "mobjects"}


def __getattr__(name: str) -> Any:
    """The manim-based names, imported on first use."""
    if name == "Diagram":  # the name it had, which the static figure's class has too
        import warnings

        warnings.warn("backpropviz.animate.Diagram is deprecated and will be removed: it is "
                      "backpropviz.animate.GraphMobject", DeprecationWarning, stacklevel=2)
        name = "GraphMobject"
    if name in _LAZY:
        from importlib import import_module

        from .formats import require_manim

        require_manim()
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
