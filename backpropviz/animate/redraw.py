"""Which parts of the picture a frame draws again: what moves, and what lies over it.

manim draws what stands still once per animation, as a background, and every
frame draws the rest over it: every mobject from the first one animated to
the last one added, since any of them might lie over what moves. A clip adds
its numbers, marks and captions as it goes, and animates the early ones again
(a box's value as its gradient lands): each frame of the D2L MLP's clip drew
nine times the parts that moved. Here a frame draws again only the parts an
animation moves, and those drawn after them whose box (widened by their
strokes and a few pixels) meets the region the moving parts sweep, from where
each animation starts to where it ends; the others join the background. What
a frame shows is unchanged, pixel for pixel: a part that stays in the
background touches no pixel that a moving part does. An animation whose reach
this cannot tell (one that is neither manim's Transform, Create or
ShowPassingFlash nor has a ``reach`` of its own, as the clip's fades and
moves do; or one whose rate function overshoots its end) keeps manim's
choice, as does a move of the camera, which moves everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from manim import (
    AnimationGroup,
    Create,
    Mobject,
    MovingCameraScene,
    ShowPassingFlash,
    Transform,
    Wait,
)
from manim.utils.family import extract_mobject_family_members
from manim.utils.iterables import list_update

from .encoding import HeldFrameScene

__all__ = ["Box", "RedrawingWhatMoves", "box", "drawn_again", "family_box", "parts_drawn_again"]

Box = tuple[float, float, float, float]  # left, bottom, right, top (scene units)

# How far past its points a part's ink may reach: a stroke's half width, its mitred
# corners (cairo's limit: ten times the half width at the sharpest), and the pixels of
# the antialiased edge.
MITRE = 10
EDGE_PIXELS = 3


class RedrawingWhatMoves(HeldFrameScene):
    """A scene whose frames draw again what moves and what lies over it (drawn_again),
    and whose held frames are converted for the encoder once (encoding.py)."""

    def get_moving_mobjects(self, *animations: Any) -> list[Mobject]:
        return drawn_again(self, animations, super().get_moving_mobjects(*animations))


def drawn_again(scene: MovingCameraScene, animations: Iterable[Any],
                moving: Sequence[Mobject]) -> list[Mobject]:
    """The parts of ``scene`` to draw every frame of ``animations`` (its
    get_moving_mobjects): those they animate, and each part drawn after one of these
    whose ink meets it. ``moving`` (manim's choice: every part from the first animated
    one on) when the camera moves, or the reach of an animation cannot be told."""
    animations = list(animations)
    frame = scene.camera.frame
    if any(frame in animation.mobject.get_family() for animation in animations):
        return list(moving)
    order = extract_mobject_family_members(  # (in the order the frame draws them)
        list_update(scene.mobjects, scene.foreground_mobjects),
        use_z_index=scene.camera.use_z_index, only_those_with_points=True)
    return parts_drawn_again(order, animations, frame.width / scene.camera.pixel_width,
                             moving)


def parts_drawn_again(order: Sequence[Mobject], animations: Sequence[Any], pixel: float,
                      moving: Sequence[Mobject]) -> list[Mobject]:
    """The parts to draw every frame of ``animations``, of the picture's parts drawn in
    ``order``: those they animate, and each part drawn after one of these whose ink
    meets it (``pixel``: a pixel's width in scene units); ``moving`` if the reach of an
    animation cannot be told.

    Every other part can be drawn once, under them all: it lies under every part of
    those it meets that is drawn every frame, as the picture draws them."""
    reaches = []
    for animation in animations:
        reach = _reach(animation)
        if reach is None:
            return list(moving)
        reaches.append(reach)
    # Each animated part: the animation it is part of (the first, if several).
    animated: dict[int, int] = {}
    for number, animation in enumerate(animations):
        for part in _animated(animation):
            animated.setdefault(id(part), number)
    wide = max((_ink(part) for part in order if id(part) in animated), default=0.0)
    edge = EDGE_PIXELS * pixel
    ink: list[Box] = []  # where what is drawn every frame so far may leave ink
    swept: set[int] = set()  # the animations whose reach is in it
    kept: dict[int, Mobject] = {}
    place = {id(part): number for number, part in enumerate(order)}
    for here, part in enumerate(order):
        if id(part) in kept:
            continue
        number = animated.get(id(part))
        if number is not None and number not in swept:
            # Where the animation takes its parts, from here on in the order.
            swept.add(number)
            ink.extend((left - wide - edge, bottom - wide - edge, right + wide + edge,
                        top + wide + edge) for left, bottom, right, top in reaches[number])
        if not (number is not None or part.updaters or _meets(part, ink)):
            continue
        for member in part.get_family():  # (what a part drawn every frame takes with it)
            if member.has_points() and id(member) not in kept:
                if place.get(id(member), here) < here:  # (drawn under what is passed)
                    return list(moving)
                kept[id(member)] = member
                left, bottom, right, top = box(member.points)
                reach = _ink(member) + edge
                ink.append((left - reach, bottom - reach, right + reach, top + reach))
    if not kept and order:
        # (manim draws every part over the background when given none: the last part
        # drawn, over all the others, stands for none)
        return [order[-1]]
    return list(kept.values())


def _meets(part: Mobject, ink: Sequence[Box]) -> bool:
    """Whether the ink of ``part`` may meet any of the boxes ``ink``."""
    if not ink:
        return False
    left, bottom, right, top = box(part.points)
    reach = _ink(part)
    boxes = np.asarray(ink)
    return bool(np.any((boxes[:, 0] <= right + reach) & (left - reach <= boxes[:, 2])
                       & (boxes[:, 1] <= top + reach) & (bottom - reach <= boxes[:, 3])))


def _animated(animation: Any) -> list[Mobject]:
    """The parts ``animation`` (and those it is made of) animates."""
    parts = list(animation.mobject.get_family())
    if isinstance(animation, AnimationGroup):
        for inner in animation.animations:
            parts.extend(_animated(inner))
    return parts


def _reach(animation: Any) -> list[Box] | None:
    """Boxes that hold every point ``animation`` puts its mobject's parts at, from its
    start to its end; None if that cannot be told."""
    if isinstance(animation, Wait):
        return []
    if isinstance(animation, AnimationGroup):
        boxes: list[Box] = []
        for inner in animation.animations:
            reach = _reach(inner)
            if reach is None:
                return None
            boxes.extend(reach)
        return boxes
    if not _within_its_ends(animation.rate_func):
        return None
    if hasattr(animation, "reach"):  # (the clip's own animations say where they go)
        return animation.reach()
    now = family_box(animation.mobject)
    if isinstance(animation, (Create, ShowPassingFlash)):
        return [now] if now else []
    if type(animation).__name__ in ("Transform", "ReplacementTransform",
                                    "_MethodAnimation") and isinstance(animation, Transform):
        if animation.path_arc:
            return None
        target = getattr(animation, "target_copy", None) or animation.target_mobject
        end = family_box(target)
        if now is None or end is None:
            return None
        return [now, end]
    return None


def _within_its_ends(rate_func: Any) -> bool:
    """Whether ``rate_func`` stays between 0 and 1 (a move then stays between its ends)."""
    values = [rate_func(t) for t in np.linspace(0, 1, 21)]
    return all(-1e-9 <= value <= 1 + 1e-9 for value in values)


def family_box(mobject: Mobject) -> Box | None:
    """The box of the points of ``mobject`` and its parts; None if it has none."""
    points = mobject.get_all_points()
    return box(points) if len(points) else None


def box(points: np.ndarray) -> Box:
    """The box of ``points`` (left, bottom, right, top)."""
    low, high = points[:, :2].min(axis=0), points[:, :2].max(axis=0)
    return float(low[0]), float(low[1]), float(high[0]), float(high[1])


def _ink(part: Mobject) -> float:
    """How far past its points ``part``'s strokes reach, in scene units."""
    widths = [getattr(part, "stroke_width", 0) or 0,
              getattr(part, "background_stroke_width", 0) or 0]
    return 0.01 * max(widths) / 2 * MITRE
