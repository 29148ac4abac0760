"""A frame draws again only what moves and what lies over it, and shows what manim's
frame shows, pixel for pixel."""

from __future__ import annotations

import numpy as np
import pytest

manim = pytest.importorskip("manim")

from backpropviz.animate import fades  # noqa: E402
from backpropviz.animate.redraw import parts_drawn_again  # noqa: E402

PIXEL = 0.02


def square(x: float, y: float = 0.0, side: float = 1.0) -> manim.Square:
    return manim.Square(side_length=side).move_to([x, y, 0]).set_stroke(width=2)


def chosen(order, animations, moving=None) -> list:
    for animation in animations:
        animation.begin()
    return parts_drawn_again(order, animations, PIXEL, list(order) if moving is None else moving)


def test_what_moves_and_what_is_drawn_after_it_where_it_goes_and_nothing_else():
    under = square(0)  # before the moving one, under it: stays in the background
    moved = square(0)
    over = manim.Rectangle(width=0.5, height=3).move_to([1.5, 0, 0])  # after, on the way
    far = square(-6)  # after, nowhere near
    on_over = square(1.5, 1.3, side=0.4)  # after "over", on it, clear of the way
    beside = square(3, 1.3, side=0.4)  # after, clear of both
    order = [under, moved, over, far, on_over, beside]
    picked = chosen(order, [fades.Moved(moved, np.array([3.0, 0, 0]))])
    assert picked == [moved, over, on_over]


def test_a_fade_in_place_draws_only_what_overlaps_it():
    plate = manim.Rectangle(width=6, height=1).set_fill(manim.WHITE, 1)
    words = manim.VGroup(square(-2, side=0.4), square(0, side=0.4), square(2, side=0.4))
    shown = square(0, side=0.4)
    order = [plate, *words, shown]
    # A word appearing over the plate: nothing drawn after it (the plate and the other
    # words were drawn before it).
    assert chosen(order, [fades.FadeIn(shown)]) == [shown]
    # The plate itself fading: every word over it, after it, is drawn again.
    assert chosen(order, [fades.FadeOut(plate)]) == [plate, *words, shown]


def test_an_animation_whose_reach_is_unknown_keeps_manims_choice_and_none_is_never_empty():
    a, b = square(0), square(5)
    order = [a, b]
    unknown = manim.Rotate(a, angle=1.0)
    assert chosen(order, [unknown], moving=[a, b]) == [a, b]
    # A wait moves nothing: the last part stands for none (manim draws every part
    # over the background when handed none).
    assert chosen(order, [manim.Wait(0.5)], moving=[]) == [b]


def test_a_clips_frames_are_manims_and_a_frame_draws_a_fraction_of_the_parts(tmp_path, example,
                                                                           monkeypatch):
    """The fork example's backward sweep, drawn frame by frame with this choice and with
    manim's (every part from the first animated one on): the same frames, drawing about
    half as many parts (a move of the camera still draws them all). The frames are read
    as drawn, before any encoder."""
    from manim.camera.camera import Camera
    from manim.renderer.cairo_renderer import CairoRenderer
    from manim.scene.scene_file_writer import SceneFileWriter

    from backpropviz.animate.sweep import BackpropScene

    G = example("fork", "c")
    drawn: list[int] = []
    frames: list[bytes] = []
    capture = Camera.capture_mobjects

    def counted(self, mobjects, **kwargs):
        mobjects = list(mobjects)
        drawn.append(len(mobjects))
        return capture(self, mobjects, **kwargs)

    def kept(self, frame, num_frames=1):
        frames.extend([frame.tobytes()] * num_frames)

    monkeypatch.setattr(Camera, "capture_mobjects", counted)
    monkeypatch.setattr(CairoRenderer, "add_frame", kept)
    monkeypatch.setattr(SceneFileWriter, "finish", lambda self: None)  # (no movie to join)

    def render() -> tuple[list[bytes], int]:
        drawn.clear()
        frames.clear()
        settings = {"media_dir": str(tmp_path), "disable_caching": True, "write_to_movie": False,
                    "progress_bar": "none", "verbosity": "WARNING", "quality": "low_quality"}
        with manim.tempconfig(settings):
            BackpropScene(G, phase="backward", speed=3.0, progress=False).render()
        return list(frames), sum(drawn)

    ours, ours_drawn = render()
    monkeypatch.setattr(BackpropScene, "get_moving_mobjects",
                        manim.MovingCameraScene.get_moving_mobjects)
    manims, manims_drawn = render()
    assert len(ours) == len(manims) > 30
    assert [k for k, (a, b) in enumerate(zip(ours, manims, strict=True)) if a != b] == []
    assert ours_drawn <= 0.6 * manims_drawn  # (about half, the camera's moves in it)
