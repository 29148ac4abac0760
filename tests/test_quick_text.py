"""QuickText is manim's Text, made from each glyph once: the same mobject, to rounding."""

from __future__ import annotations

import numpy as np
import pytest

manim = pytest.importorskip("manim")

from backpropviz.animate.quick_text import QuickText  # noqa: E402

# What only says how the mobject was made (and the file Pango wrote, whose name is
# hashed from the class's own name).
MAKING = {"path_obj", "original_id", "id_to_vgroup_dict", "submobjects", "name", "file_name"}


def assert_same(ours: manim.Mobject, manims: manim.Mobject, where: str) -> None:
    """Every attribute of ``ours`` and its family is manim's (numbers to 1e-12)."""
    assert isinstance(ours, type(manims)), where
    assert set(vars(ours)) - MAKING == set(vars(manims)) - MAKING, where
    for name in set(vars(ours)) - MAKING - {"chars"}:
        a, b = vars(ours)[name], vars(manims)[name]
        if isinstance(a, np.ndarray):
            assert a.shape == b.shape and np.allclose(a, b, rtol=0, atol=1e-12), (where, name)
        elif isinstance(a, float):
            assert a == pytest.approx(b, abs=1e-12), (where, name)
        elif isinstance(a, (int, str, bool, type(None))):
            assert a == b, (where, name)
        else:
            assert type(a) is type(b), (where, name)
    if isinstance(ours, manim.Text):
        assert len(ours.chars) == len(manims.chars), where
    assert len(ours.submobjects) == len(manims.submobjects), where
    for i, (a, b) in enumerate(zip(ours.submobjects, manims.submobjects, strict=True)):
        assert_same(a, b, f"{where}[{i}]")


@pytest.mark.parametrize("content", [
    "x",
    "  a b",  # spaces lead and part words: a space is set, but has no outline
    "∂loss/∂W₁ = 0.25 · (−1.5) = −0.375",
    "fi ffl: ligatures join two glyphs into one",
    "the sum of the shares: [0.1, −2.3; 4.5, 6.7] ⊙ σ′(z)",
])
@pytest.mark.parametrize("style", [
    {"font": "DejaVu Sans", "font_size": 20, "color": "#1f4e9c"},
    {"font": "DejaVu Serif", "font_size": 33.3, "color": "#ffffff", "slant": "ITALIC"},
])
def test_a_quick_text_is_manims_text(content, style, tmp_path):
    with manim.tempconfig({"media_dir": str(tmp_path)}):
        manims = manim.Text(content, **style)
        ours = QuickText(content, **style)
        again = QuickText(content, **style)  # its glyphs now made before
    assert len(ours.family_members_with_points()) == len(content.replace(" ", "")) or \
        "fi" in content
    assert_same(ours, manims, content)
    assert_same(again, manims, content)
    # A copy (as a Transform makes) is the same mobject too, and its own.
    copied = ours.copy()
    assert_same(copied, manims, content)
    copied[0].points[:] = 0
    copied[0].set_fill("#ff0000")
    assert_same(ours, manims, content)
    # Each glyph's arrays are its own: a change to one leaves the next text's alone.
    ours[0].points[:] = 0
    ours[0].set_fill("#ff0000")
    assert_same(QuickText(content, **style), manims, content)


def test_a_text_not_centred_is_left_where_manim_sets_it(tmp_path):
    with manim.tempconfig({"media_dir": str(tmp_path)}):
        manims = manim.Text("W₁ · x", should_center=False, font_size=20)
        ours = QuickText("W₁ · x", should_center=False, font_size=20)
    assert_same(ours, manims, "not centred")


def test_a_quick_text_morphs_into_another_as_manims_text_does(tmp_path):
    """A Transform aligns the two texts' glyphs, each split into its outlines (subpaths):
    QuickText's glyphs split theirs as manim's do, so the morph is manim's, point for
    point. (Glyphs of several outlines: i, %, ∂, 8, the bar of ₁.)"""
    with manim.tempconfig({"media_dir": str(tmp_path)}):
        texts = ["∂L/∂W₁ = 0.25", "−1.375 · i% + 8"]
        ours, manims = [QuickText(t, font_size=24) for t in texts], \
            [manim.Text(t, font_size=24) for t in texts]
    outlines = 0
    for mine, theirs in zip(ours, manims, strict=True):
        for a, b in zip(mine.family_members_with_points(), theirs.family_members_with_points(),
                        strict=True):
            got = a.get_subpaths()
            want = manim.VMobject.get_subpaths_from_points(b, b.points)
            assert len(got) == len(want)
            assert all(np.allclose(g, w, rtol=0, atol=1e-12)
                       for g, w in zip(got, want, strict=True))
            outlines += len(got) > 1
    assert outlines >= 5
    ours[0].align_data(ours[1])
    manims[0].align_data(manims[1])
    for mine, theirs in zip(ours, manims, strict=True):
        assert_same(mine, theirs, "aligned")


def test_a_glyph_set_before_in_another_text_is_not_read_again(tmp_path, monkeypatch):
    """Pango numbers each text's glyphs as they come ("ab": a is glyph0-1; "ba": b is):
    a glyph met in an earlier text is known by its outline, not by that number, so a
    text of glyphs all set before reads no SVG through manim's parser, and is still
    manim's text."""
    from backpropviz.animate import quick_text

    read: list[str] = []
    parsed = quick_text._parsed
    monkeypatch.setattr(quick_text, "_parsed",
                        lambda text, document: read.append(document) or parsed(text, document))
    style = {"font": "DejaVu Sans", "font_size": 21.5, "color": "#123456"}
    with manim.tempconfig({"media_dir": str(tmp_path)}):
        QuickText("0.25 = ab", **style)
        read.clear()
        ours = QuickText("ba = 5.20", **style)
        manims = manim.Text("ba = 5.20", **style)
    assert read == []
    assert_same(ours, manims, "ba = 5.20")
