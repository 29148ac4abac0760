"""The clip's fades and moves look as manim's at every moment, and copy nothing."""

from __future__ import annotations

import numpy as np
import pytest

manim = pytest.importorskip("manim")

from backpropviz.animate import fades  # noqa: E402


def thing() -> manim.VGroup:
    """A box with words in it, over a plate, parts of several opacities and a gradient."""
    box = manim.RoundedRectangle(width=3, height=1.2, corner_radius=0.2)
    box.set_fill("#dbe8f5", 0.8).set_stroke("#222222", 2)
    words = manim.Text("w₁ = 0.25", font_size=30).move_to(box)
    words.set_color_by_gradient("#1f4e9c", "#9c1f1f")
    plate = manim.BackgroundRectangle(words, color="#ffffff", fill_opacity=1)
    return manim.VGroup(plate, box, words).shift(1.5 * manim.LEFT + 0.5 * manim.UP)


def state(mobject: manim.Mobject) -> list[tuple]:
    """What is drawn of each part: its points and its colours."""
    return [(part.points.copy(), part.fill_rgbas.copy(), part.stroke_rgbas.copy(),
             part.background_stroke_rgbas.copy())
            for part in mobject.get_family() if part.has_points()]


def assert_same(ours: list[tuple], manims: list[tuple]) -> None:
    assert len(ours) == len(manims)
    for one, other in zip(ours, manims, strict=True):
        for a, b in zip(one, other, strict=True):
            assert a.shape == b.shape and np.allclose(a, b, rtol=0, atol=1e-12)


def played(animation: manim.Animation, alphas: list[float]) -> list[list[tuple]]:
    animation.begin()
    seen = []
    for alpha in alphas:
        animation.interpolate(alpha)
        seen.append(state(animation.mobject))
    animation.finish()
    seen.append(state(animation.mobject))
    return seen


ALPHAS = [0.0, 0.2, 0.5, 0.9, 1.0]
CASES = [("FadeIn", {}), ("FadeIn", {"scale": 1.3}), ("FadeIn", {"shift": 0.1 * manim.UP}),
         ("FadeIn", {"scale": 1.25, "rate_func": manim.rate_functions.there_and_back}),
         ("FadeOut", {}), ("FadeOut", {"scale": 0.4}),
         ("FadeOut", {"shift": 0.3 * manim.DOWN, "scale": 1.5})]


@pytest.mark.parametrize(("name", "options"), CASES)
def test_a_fade_is_manims_fade_at_every_moment(name, options):
    ours = played(getattr(fades, name)(thing(), **options), ALPHAS)
    manims = played(getattr(manim, name)(thing(), **options), ALPHAS)
    for mine, theirs in zip(ours, manims, strict=True):
        assert_same(mine, theirs)
    # (It did change the look: the first moment of a fade in is transparent.)
    if name == "FadeIn" and "rate_func" not in options:
        assert all(rgbas[:, 3].max() == 0 for _, *colours in ours[0] for rgbas in colours)


def test_a_move_is_manims_move_to_and_scale():
    to = np.array([2.0, -1.0, 0.0])
    ours = played(fades.Moved(thing(), to, 0.6), ALPHAS)
    manims = played(thing().animate.move_to(to).scale(0.6).build(), ALPHAS)
    for mine, theirs in zip(ours, manims, strict=True):
        assert_same(mine, theirs)


def test_nothing_is_copied_and_a_fade_out_leaves_its_mobject_as_it_found_it(monkeypatch):
    """manim's fades copy their mobject twice as they begin; these copy none of it. A
    fade out removes its mobject from the scene and leaves it as it was (as manim's)."""
    shown, gone = thing(), thing()
    before = state(gone)

    def copied(self, *args, **kwargs):
        raise AssertionError("a mobject was copied")

    monkeypatch.setattr(manim.Mobject, "copy", copied)
    with manim.tempconfig({"dry_run": True, "verbosity": "WARNING"}):
        scene = manim.Scene()
        scene.add(gone)
        scene.play(fades.FadeIn(shown, scale=1.3), fades.FadeOut(gone, shift=manim.UP))
    assert shown in scene.mobjects and gone not in scene.mobjects
    assert_same(state(gone), before)
