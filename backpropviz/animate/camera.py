"""Where the camera looks: whole columns of the graph, filling the room between title and caption.

Pure geometry, no manim: a graph laid out left to right is a row of columns
(boxes and circles whose extents overlap across the flow), parted by the
rank gaps. A view shows a run of whole columns in the graph's room on screen,
and keeps every other column wholly outside the frame, so that no box is cut
at the frame's edge; the full height of what lies across its columns and the
gaps beside them is in view (an edge never runs into the title or the caption),
so a view of columns under a tall one need not shrink to that one's height.
The view zooms in, never out past the point where the smallest text is smaller
than the clip allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Room", "View", "column_heights", "columns", "view_of", "whole_view"]

_HAIR = 1e-6  # scene units


@dataclass(frozen=True)
class Room:
    """The graph's room on screen (screen units: the camera at rest, its centre at 0)."""

    left: float
    right: float
    bottom: float
    top: float

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def height(self) -> float:
        return self.top - self.bottom


@dataclass(frozen=True)
class View:
    """A camera frame: its centre (scene units), its zoom (frame width over the frame
    width at rest: 0.8 shows things 1.25 times larger) and the columns it shows."""

    x: float
    y: float
    zoom: float
    first: int
    last: int


def columns(extents: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The columns of a drawing whose parts span ``extents`` (left, right) across: the
    parts' extents merged where they overlap, left to right."""
    merged: list[list[float]] = []
    for left, right in sorted(extents):
        if merged and left <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], right)
        else:
            merged.append([left, right])
    return [(left, right) for left, right in merged]


def column_heights(cols: Sequence[tuple[float, float]],
                   points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """How far the drawing reaches up and down across each column and the gaps beside
    it (bottom, top): of its ``points`` (x, y: the corners of its boxes, the points of
    its edges) those from the column before's right to the column after's left."""
    xy = np.asarray(points, dtype=float).reshape(-1, 2)
    order = np.argsort(xy[:, 0], kind="stable")
    xs, ys = xy[order, 0], xy[order, 1]
    heights = []
    for index in range(len(cols)):
        low = cols[index - 1][1] if index > 0 else -np.inf
        high = cols[index + 1][0] if index + 1 < len(cols) else np.inf
        within = ys[np.searchsorted(xs, low, "left"):np.searchsorted(xs, high, "right")]
        heights.append((float(within.min()), float(within.max())) if within.size
                       else (0.0, 0.0))
    return heights


def _view(cols: Sequence[tuple[float, float]], first: int, last: int,
          heights: Sequence[tuple[float, float]], room: Room, frame_width: float,
          least: float) -> View | None:
    """The view of columns ``first`` to ``last`` at the least zoom that holds them and
    what reaches across them (``heights``, column_heights) in ``room``, the others
    wholly outside the frame; None if there is none."""
    bottom = min(heights[i][0] for i in range(first, last + 1))
    top = max(heights[i][1] for i in range(first, last + 1))
    left, right = cols[first][0], cols[last][1]
    zoom = max((right - left) / room.width, (top - bottom) / room.height, least)
    half = zoom * frame_width / 2
    # The frame's centre x: the columns inside the room, their neighbours outside it.
    low = right - zoom * room.right
    high = left - zoom * room.left
    if first > 0:  # (a hair outside: a frame's edge on a box's would cut it, in floats)
        low = max(low, cols[first - 1][1] + half + _HAIR)
    if last < len(cols) - 1:
        high = min(high, cols[last + 1][0] - half - _HAIR)
    if low > high + 1e-9:
        return None
    centred = (left + right) / 2 - zoom * (room.left + room.right) / 2
    x = min(max(centred, low), high)
    y = (bottom + top) / 2 - zoom * (room.bottom + room.top) / 2
    return View(x, y, zoom, first, last)


def whole_view(cols: Sequence[tuple[float, float]], heights: Sequence[tuple[float, float]],
               room: Room, frame_width: float) -> View:
    """The view of the whole graph in the room."""
    view = _view(cols, 0, len(cols) - 1, heights, room, frame_width, 0.0)
    assert view is not None  # (no column is outside: it always exists)
    return view


def view_of(cols: Sequence[tuple[float, float]], wanted: tuple[int, int],
            heights: Sequence[tuple[float, float]], room: Room, frame_width: float,
            most: float, least: float, now: View | None) -> View:
    """The view that shows columns ``wanted`` (first, last): ``now`` if it does, else the
    one with the most columns (nearest to ``now`` among those) at a zoom of at most
    ``most`` and at least ``least``; if none is that small, the one of the least zoom."""
    a, b = wanted
    if now is not None and now.first <= a and b <= now.last and now.zoom <= most + 1e-9:
        return now
    found = [view for first in range(a + 1) for last in range(b, len(cols))
             if (view := _view(cols, first, last, heights, room, frame_width, least))]
    small = [view for view in found if view.zoom <= most + 1e-9]
    if not small:  # the least zoom; of the views about as small (the height of what lies
        # across the columns sets it), the one with the most columns: a frame that wide
        # shows them, rather than keep them out and leave its side empty
        least_zoom = min(view.zoom for view in found)
        near = [view for view in found if view.zoom <= least_zoom * 1.02]
        return max(near, key=lambda view: (view.last - view.first, -view.zoom))
    here = now.x if now is not None else 0.0
    return max(small, key=lambda view: (view.last - view.first, -abs(view.x - here)))
