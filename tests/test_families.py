"""A clip lists a mobject's family as manim does, member for member, in manim's order."""

from __future__ import annotations

import manim
import pytest
from manim import Circle, Square, Text, VGroup
from test_animate import dry_run

from backpropviz.animate.families import family, quick_families
from backpropviz.animate.sweep import BackpropScene

MANIMS = manim.Mobject.get_family  # (read before any clip is rendered here)


class _Compared(BackpropScene):
    """A scene that, before each animation, lists every family on screen both ways."""

    def play(self, *animations, **kwargs):
        on_screen = list(self.mobjects) + [a.mobject for a in animations
                                           if isinstance(a, manim.Animation)]
        for top in on_screen:
            for member in MANIMS(top):
                self.__dict__.setdefault("compared", []).append(
                    (family(member), MANIMS(member)))
        super().play(*animations, **kwargs)


@pytest.mark.parametrize("name", ["d2l_mlp", "fork", "capstone/forked_neuron"])
def test_every_family_of_a_clip_is_listed_as_manim_lists_it(example, name):
    scene = dry_run(example(name), _Compared)
    assert len(scene.compared) > 1000  # (every part of the picture, at every animation)
    assert all(ours == manims for ours, manims in scene.compared)
    assert sum(len(manims) > 1 for _, manims in scene.compared) > 100


def test_a_member_listed_twice_keeps_its_last_place_as_in_manim():
    shared = Text("x")
    first, second = VGroup(shared, Square()), VGroup(Circle(), shared)
    whole = VGroup(first, second)
    assert family(whole) == MANIMS(whole)
    assert family(whole).count(shared) == 1
    assert family(whole).index(shared) > family(whole).index(second)


def test_a_cycle_is_not_entered_again_as_in_manim():
    inner = VGroup(Square())
    outer = VGroup(inner, Circle())
    inner.submobjects.append(outer)  # (a cycle: outer is its own grandchild)
    assert family(outer) == MANIMS(outer)
    assert family(inner) == MANIMS(inner)


def test_manims_walk_is_put_back_after_a_render_even_a_failed_one(example):
    seen = []

    class Failing(BackpropScene):
        def construct(self):
            seen.append(manim.Mobject.get_family)
            raise RuntimeError("the story broke")

    with pytest.raises(RuntimeError, match="the story broke"):
        dry_run(example("add_mul", "e"), Failing)
    assert seen == [family]
    assert manim.Mobject.get_family is MANIMS
    with quick_families(), quick_families():
        assert manim.Mobject.get_family is family
    assert manim.Mobject.get_family is MANIMS
