"""Text widths: the estimate against the fonts themselves, the figures' cells, cutting to fit."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from backpropviz import Tensor
from backpropviz.captions import step_captions
from backpropviz.ir import to_networkx
from backpropviz.memory import timeline
from backpropviz.memory_chart import NAME_PX, TICK_PX, timeline_svg
from backpropviz.metrics import FACES, FULL_EM, advance, fit_text, text_width
from backpropviz.names import value_names

SVG = "{http://www.w3.org/2000/svg}"


def test_the_numbers_face_sizes_cells_as_the_figures_have_always_been_sized():
    # Helvetica's digits and e 556, the point 278, minus and plus 584, n a f i
    # and space as Helvetica has them; anything else a full em (the golden DOT
    # files' cell widths come from these).
    assert advance("\u22121.5e+3", "numbers") == 584 + 556 + 278 + 556 + 556 + 584 + 556
    assert advance("nan", "numbers") == advance("inf", "numbers") + 556 + 556 - 222 - 278
    assert advance(" ", "numbers") == 278
    for other in ("x", "-", "\u2026", "\u22ee", "R"):
        assert advance(other, "numbers") == FULL_EM
        assert advance("1" + other, "numbers") == 556 + FULL_EM
    # For what numbers are made of, the numbers face is Helvetica.
    assert all(FACES["sans"][c] == width for c, width in FACES["numbers"].items())


@pytest.fixture(scope="module")
def measured():
    """Advance widths as cairo sets them in the faces fontconfig gives for the
    pictures' fonts (Helvetica, Times italic), per 1000 of the size."""
    cairo = pytest.importorskip("cairo")
    context = cairo.Context(cairo.ImageSurface(cairo.FORMAT_ARGB32, 4, 4))

    def width(text: str, face: str) -> float:
        family, slant = (("Times", cairo.FONT_SLANT_ITALIC) if face == "serif"
                         else ("Helvetica", cairo.FONT_SLANT_NORMAL))
        context.select_font_face(family, slant, cairo.FONT_WEIGHT_NORMAL)
        context.set_font_size(1000)
        return context.text_extents(text).x_advance

    return width


def test_the_estimate_is_the_fonts_own_advance(measured, example):
    G = example("d2l_mlp")
    captions = [line for caption in step_captions(G) for line in [caption.rule, *caption.worked]]
    names = [name.text for name in value_names(G).values()]
    ascii_text = "".join(map(chr, range(32, 127)))
    for face, texts in (("sans", [*captions, ascii_text, "\u2212\u00d7\u00b7\u2202\u00b2\u03a3"]),
                        ("serif", [*names, ascii_text, "\u2212\u00b7\u2202\u00b2\u03bb"])):
        for text in texts:
            if all(c in FACES[face] for c in text):  # (what the tables lack counts an em)
                assert advance(text, face) == pytest.approx(measured(text, face), abs=1), text


def test_a_character_the_tables_lack_is_never_counted_too_narrow(measured):
    for character in ("\u2299", "\u1d40", "\u22ee", "\u2207"):  # ⊙ ᵀ ⋮ ∇
        assert character not in FACES["sans"]
        assert text_width(character, 10) >= measured(character, "sans") / 100


def test_fit_text_keeps_the_longest_start_that_fits_with_an_ellipsis():
    assert fit_text("W1", 100, 20) == "W1"
    cut = fit_text("a_rather_long_name", 120, 20, "serif")
    assert cut.endswith("\u2026") and "a_rather_long_name".startswith(cut[:-1])
    assert text_width(cut, 20, "serif") <= 120
    longer = "a_rather_long_name"[:len(cut)] + "\u2026"
    assert text_width(longer, 20, "serif") > 120
    assert fit_text("Wide", 1, 20) == "W\u2026"  # at least the first character


def test_the_memory_charts_labels_fit_their_bars(example):
    # Twenty-six narrow bars under long names: staggered over two rows, each label
    # has the room of two bars, and one longer than that is cut to it.
    x = Tensor([[1.0, 2.0]], label="x")
    h = x
    for layer in range(6):
        h = (h * 1.5).relu()
        h.label = f"activation_{layer}"
    loss = h.sum()
    loss.label = "loss"
    loss.backward()
    line = timeline(to_networkx(loss))
    root = ET.fromstring(timeline_svg(line))
    slot = (1410 - 170) / len(line.steps)
    # (the op under each bar 34 px below the axis, its result 64 px below; every other
    # bar's a row lower, the axis raised by that row)
    axis, lower = 870 - 62, 870
    rows = {axis + 34, axis + 64, lower + 34, lower + 64}
    labels = [t for t in root.iter(f"{SVG}text") if float(t.get("y")) in rows]
    assert len(labels) == 2 * len(line.steps)
    assert {float(t.get("y")) for t in labels} == rows
    assert any("".join(t.itertext()).endswith("\u2026") for t in labels), "cut to their room"
    for text in labels:
        face = "serif" if text.get("font-style") == "italic" else "sans"
        assert float(text.get("font-size")) == (NAME_PX if face == "serif" else TICK_PX)
        words = "".join(text.itertext())
        assert text_width(words, float(text.get("font-size")), face) <= 2 * slot - 4, words
