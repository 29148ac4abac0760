"""What moves: pulses along edges, rings round ops, a gradient stopped at a dead ReLU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from manim import (
    DOWN,
    UP,
    Animation,
    AnimationGroup,
    Dot,
    ShowPassingFlash,
    VGroup,
    VMobject,
    Wait,
    rate_functions,
)

from ..style import EXPRESSION_PT, Theme
from .mobjects import Z_BADGE, Z_MARK, Z_PULSE, OpNode, TextStore, pen_width
from .redraw import Box, family_box

__all__ = ["Along", "dead_unit_note", "flash", "overlap", "parallel", "pulse", "ring_over",
           "stop_bar", "within"]


def ring_over(op: OpNode, color: str, fill: str) -> VGroup:
    """A copy of an op's circle (a module's ellipse), outlined in ``color``, to animate on
    top of it (under the rows of the parameters it holds, drawn above marks)."""
    circle = op.circle.copy()
    circle.set_stroke(color, width=op.circle.get_stroke_width() * 2.2 + 1.5)
    circle.set_fill(fill, 1)
    return VGroup(circle, op.symbol.copy())


def pulse(path: VMobject, color: str, run_time: float, scale: float,
          width: float = 1.6) -> AnimationGroup:
    """A dot running along ``path`` with a flash of the path behind it (``scale``:
    scene units per point)."""
    dot = Dot(path.get_start(), radius=3.2 * scale, color=color).set_z_index(Z_PULSE)
    flash = path.copy().set_stroke(color, width=pen_width(width * 1.6, scale))
    flash.set_z_index(Z_MARK)
    ease = rate_functions.ease_in_out_sine
    return AnimationGroup(_Travel(dot, path, rate_func=ease),
                          ShowPassingFlash(flash, time_width=0.6, rate_func=ease),
                          run_time=run_time)


def flash(path: VMobject, color: str, scale: float, width: float = 2.2) -> ShowPassingFlash:
    """A flash of ``path`` in ``color`` running along it, as a number travels it
    (``scale``: scene units per point)."""
    lit = path.copy().set_stroke(color, width=pen_width(width * 1.6, scale))
    return ShowPassingFlash(lit.set_z_index(Z_MARK), time_width=0.6,
                            rate_func=rate_functions.ease_in_out_sine)


def stop_bar(path: VMobject, at: float, palette: Theme, store: TextStore,
             scale: float) -> list[VMobject]:
    """A dead ReLU: a bar across ``path`` at proportion ``at`` and "no gradient" under
    it, where the gradient stops (they stay for the step)."""
    stop = path.point_from_proportion(at)
    direction = path.point_from_proportion(min(1.0, at + 0.01)) - stop
    direction /= max(np.linalg.norm(direction), 1e-9)
    normal = np.array([-direction[1], direction[0], 0.0])
    half = 9 * scale
    bar = VMobject().set_points_as_corners([stop + normal * half, stop - normal * half])
    bar.set_stroke(palette.dead_line, width=pen_width(4.0, scale))
    words = store.text("no gradient", EXPRESSION_PT * scale, palette.dead_text)
    words.next_to(bar, DOWN, buff=3 * scale)
    return [bar.set_z_index(Z_BADGE), words.set_z_index(Z_BADGE)]


def dead_unit_note(op: OpNode, boxes: Sequence[VMobject], palette: Theme, store: TextStore,
                   scale: float) -> tuple[str, VMobject]:
    """Under a ReLU with some dead units, which units pass no gradient: the words, and
    them set beneath the op, or above it, as near as they are clear of every box."""
    words = f"{dead_where(np.asarray(op.attrs['dead'], dtype=bool))}: gradient stops"
    note = store.text(words, EXPRESSION_PT * scale, palette.dead_text)
    for away in range(16):
        side = DOWN if away % 2 == 0 else UP
        note.next_to(op.circle, side, buff=(4 + 6 * (away // 2)) * scale)
        if not any(overlap(note, box) for box in boxes):
            break
    return words, note.set_z_index(Z_BADGE)


def dead_where(dead: np.ndarray) -> str:
    """Where a ReLU is dead, in words: its units (``dead unit 1, 3``); of a batch, each
    example's (``example 1: unit 1, 3``) or a unit dead for every example; of more than
    three examples, or more axes, how many entries."""
    if dead.ndim <= 1:
        return "dead unit " + ", ".join(str(i + 1) for i in np.flatnonzero(dead.ravel()))
    if dead.ndim == 2:
        always = np.flatnonzero(dead.all(axis=0))
        if len(always) and not (dead & ~dead.all(axis=0)).any():
            units = ", ".join(str(i + 1) for i in always)
            return f"dead unit {units} for every example"
        rows = [r for r in range(dead.shape[0]) if dead[r].any()]
        if len(rows) <= 3:
            return "dead " + "; ".join(
                f"example {r + 1}: unit " + ", ".join(str(i + 1) for i in np.flatnonzero(dead[r]))
                for r in rows)
    return f"dead in {int(dead.sum())} of {dead.size} entries"


class _Travel(Animation):
    """A dot running along a path, fading in as it leaves and out as it arrives."""

    def __init__(self, dot: Dot, path: VMobject, **kwargs: Any) -> None:
        super().__init__(dot, remover=True, **kwargs)
        self.path = path

    def reach(self) -> list[Box] | None:
        return _carried(self.mobject, self.path)

    def interpolate_mobject(self, alpha: float) -> None:
        where = self.rate_func(alpha)
        self.mobject.move_to(self.path.point_from_proportion(where))
        self.mobject.set_opacity(min(1.0, 6 * alpha, 6 * (1 - alpha)))


class Along(Animation):
    """A mobject carried along a path. Each frame places it from where it started, not
    from where the last frame left it (as manim's MoveAlongPath does), so where it ends
    is the same to the last bit however many frames were played: a clip rendered in
    several processes, which skip the animations others draw, goes on from the state a
    render in one process reaches."""

    def __init__(self, mobject: VMobject, path: VMobject, **kwargs: Any) -> None:
        super().__init__(mobject, **kwargs)
        self.path = path

    def reach(self) -> list[Box] | None:
        return _carried(self.mobject, self.path)

    def create_starting_mobject(self) -> VMobject:
        starting = super().create_starting_mobject()
        self.start = starting.get_center()
        return starting

    def interpolate_mobject(self, alpha: float) -> None:
        shift = self.path.point_from_proportion(self.rate_func(alpha)) - self.start
        for moved, start in zip(self.mobject.get_family(), self.starting_mobject.get_family(),
                                strict=True):
            moved.points = start.points + shift


def _carried(mobject: VMobject, path: VMobject) -> list[Box] | None:
    """Boxes that hold ``mobject`` wherever along ``path`` it is carried (redraw.py)."""
    now, along = family_box(mobject), family_box(path)
    if now is None or along is None:
        return None
    half_width, half_height = (now[2] - now[0]) / 2, (now[3] - now[1]) / 2
    return [now, (along[0] - half_width, along[1] - half_height,
                  along[2] + half_width, along[3] + half_height)]


def overlap(a: VMobject, b: VMobject) -> bool:
    """Whether the bounding boxes of ``a`` and ``b`` meet."""
    return not (a.get_right()[0] < b.get_left()[0] or b.get_right()[0] < a.get_left()[0]
                or a.get_top()[1] < b.get_bottom()[1] or b.get_top()[1] < a.get_bottom()[1])


def parallel(animations: Sequence[Any], seconds: float) -> Any:
    """``animations`` played together for ``seconds``, or a wait if there are none."""
    return AnimationGroup(*animations, run_time=seconds) if animations else Wait(seconds)


def within(mobject: VMobject, center: float, width: float) -> np.ndarray:
    """The shift across that puts ``mobject`` inside a frame ``width`` wide centred at x =
    ``center`` (a margin of 2% inside), as little as it takes; none if it is inside."""
    margin = 0.02 * width
    left, right = center - width / 2 + margin, center + width / 2 - margin
    return np.array([max(0.0, left - mobject.get_left()[0])
                     - max(0.0, mobject.get_right()[0] - right), 0.0, 0.0])
