"""Fades and moves that change what they animate in place, copying nothing.

manim's FadeIn and FadeOut are Transforms: each copies its mobject twice (the
faded copy and the target's), aligns the copies with it, and then blends every
attribute of every part each frame; so does ``mobject.animate``. For the boxes
of numbers, captions and cards a clip fades in and out, and the title and
caption that ride with each camera move, that set-up was a third of the time
it takes to tell the clip without drawing it (a dry run, and the conductor of
a render in several processes: the D2L MLP's story took 1.8 s, now 1.1 s).
These animations change the mobject's own arrays instead, from what they keep
as they begin (each part's points, and its colours' opacities), to the same
points and colours as manim's at every moment (tests/test_fades.py); the
clips' frames are the same to the pixel.

FadeIn and FadeOut here take manim's ``shift`` and ``scale`` and any
Animation keyword (``run_time``, ``rate_func``); FadeOut leaves its mobject as
it found it, off the screen (as manim's does). ``Moved`` carries mobjects to
where ``move_to`` and ``scale`` would put them (the title and caption riding
with the camera). ``Becomes`` is one table of numbers turned into another (a
share's factors into their product, the product into the gradient's slot, a sum's
terms into the sum): each carried to the other's place and size as one fades
out and the other in, as manim's FadeTransform shows it. manim's
ReplacementTransform morphed them glyph by glyph, which first pairs every glyph's
curves with the other's: for the wide tables of a small CNN's modules, two thirds
of the time it took to tell its clip (11.7 s, now 3.8 s), for a morph that reads as
noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from manim import ORIGIN, Animation, AnimationGroup, Mobject

from .redraw import Box, box

__all__ = ["Becomes", "FadeIn", "FadeOut", "Moved"]

# The colour arrays of a VMobject whose opacity a fade changes (manim's fade(1) sets
# each of them transparent).
_COLOURS = ("fill_rgbas", "stroke_rgbas", "background_stroke_rgbas")


class _Blend(Animation):
    """An animation of each part of a mobject with points from one set of points and
    opacities to another: ``_ends`` gives the (start, end) points of each, from those it
    has as the animation begins; ``opaque`` says where along it the colours are opaque
    (``(False, True)`` fades in)."""

    opaque: tuple[bool, bool] = (True, True)

    def begin(self) -> None:
        parts = [part for part in self.mobject.get_family() if part.has_points()]
        self._parts = parts
        self._points = self._ends([part.points.copy() for part in parts])
        self._moves = any(start is not end for start, end in self._points)
        # Each part's colour arrays, and their opacity column at each end.
        self._colours = [[(name, getattr(part, name).copy()) for name in _COLOURS
                          if isinstance(getattr(part, name, None), np.ndarray)]
                         if self.opaque != (True, True) else [] for part in parts]
        if self.suspend_mobject_updating:
            self.mobject.suspend_updating()
        self.interpolate(0)

    def _ends(self, points: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(p, p) for p in points]

    def reach(self) -> list[Box] | None:
        """A box that holds every point of the parts from start to end (redraw.py);
        None before the animation begins."""
        if not hasattr(self, "_points"):
            return None
        ends = [p for pair in self._points for p in pair if len(p)]
        return [box(np.vstack(ends))] if ends else []

    def get_all_mobjects(self) -> Sequence[Mobject]:
        return [self.mobject]  # (no starting copy to update)

    def interpolate_mobject(self, alpha: float) -> None:
        alpha = self.rate_func(alpha)
        self._set(alpha)

    def _set(self, alpha: float) -> None:
        """Each part as it is ``alpha`` of the way (0 the start, 1 the end)."""
        low, high = (1.0 if end else 0.0 for end in self.opaque)
        opacity = low + alpha * (high - low)
        for part, (start, end), colours in zip(self._parts, self._points, self._colours,
                                               strict=True):
            if self._moves:
                part.points = (start.copy() if alpha == 0 else end.copy() if alpha == 1
                               else start + alpha * (end - start))
            for name, kept in colours:
                rgbas = kept.copy()
                rgbas[:, 3] *= opacity
                setattr(part, name, rgbas)


class _Fade(_Blend):
    """A fade that moves ``shift`` and scales ``scale`` times about the centre between
    its mobject as it is and the faded end (``towards``: -1 the start, 1 the end)."""

    towards = 1

    def __init__(self, mobject: Mobject, shift: np.ndarray | None = None, scale: float = 1,
                 **kwargs: Any) -> None:
        super().__init__(mobject, **kwargs)
        self.shift = ORIGIN if shift is None else np.asarray(shift, dtype=float)
        self.factor = scale

    def _ends(self, points: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        if self.factor == 1 and not self.shift.any():
            return [(p, p) for p in points]
        shift = self.towards * self.shift
        centre = self.mobject.get_center() + shift
        ends = [(p, (p + shift - centre) * self.factor + centre) for p in points]
        return [(faded, p) for p, faded in ends] if self.towards < 0 else ends


class FadeIn(_Fade):
    """``mobject`` faded in (added to the scene as it begins), from ``shift`` back of
    where it is and ``scale`` times its size about its centre, as manim's FadeIn."""

    opaque = (False, True)
    towards = -1

    def __init__(self, mobject: Mobject, **kwargs: Any) -> None:
        super().__init__(mobject, introducer=True, **kwargs)


class FadeOut(_Fade):
    """``mobject`` faded out (removed from the scene as it ends), moving ``shift`` and
    growing ``scale`` times about its centre as it goes; then, off the screen, as it was
    (as manim's FadeOut leaves it)."""

    opaque = (True, False)

    def __init__(self, mobject: Mobject, **kwargs: Any) -> None:
        super().__init__(mobject, remover=True, **kwargs)

    def clean_up_from_scene(self, scene: Any) -> None:
        super().clean_up_from_scene(scene)
        self._set(0)


class Moved(_Blend):
    """``mobject`` carried to ``to`` (its centre there) and scaled ``scale`` times about
    it, as ``mobject.animate.move_to(to).scale(scale)`` carries it."""

    def __init__(self, mobject: Mobject, to: np.ndarray, scale: float = 1,
                 **kwargs: Any) -> None:
        super().__init__(mobject, **kwargs)
        self.to = np.asarray(to, dtype=float)
        self.factor = scale

    def _ends(self, points: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        centre = self.mobject.get_center()
        return [(p, (p - centre) * self.factor + self.to) for p in points]


class Becomes(AnimationGroup):
    """``mobject`` becomes ``target`` (which takes its place in the scene, as with
    manim's ReplacementTransform): ``mobject`` fades out as it moves to ``target``'s
    centre and height, while ``target`` fades in from ``mobject``'s."""

    def __init__(self, mobject: Mobject, target: Mobject, **kwargs: Any) -> None:
        self.source, self.target = mobject, target
        shift = target.get_center() - mobject.get_center()
        factor = target.height / mobject.height if mobject.height and target.height else 1.0
        super().__init__(FadeOut(mobject, shift=shift, scale=factor),
                         FadeIn(target, shift=shift, scale=1 / factor), **kwargs)
