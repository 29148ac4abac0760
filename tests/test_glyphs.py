"""Every glyph a figure or chart uses is drawn in its PNG, by every converter we use."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from backpropviz.glyphs import with_fallback_fonts

cairosvg = pytest.importorskip("cairosvg")

# The characters our names, captions and legends use beyond ASCII.
GLYPHS = "‖·²◀∂Σ⊙λ−×÷→∇⟲"
FACES = [("Helvetica,Arial,sans-serif", "normal"), ("Times,serif", "italic")]


def _ink(png: bytes) -> np.ndarray:
    """How dark each pixel is (0 white .. 1 black)."""
    image = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)
    return 1 - image / 255


def _svg(char: str, family: str, style: str) -> str:
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="80" height="80" '
            f'font-family="{family}"><rect width="80" height="80" fill="white"/>'
            f'<text x="20" y="55" font-size="40" font-style="{style}">{char}</text></svg>')


@pytest.mark.parametrize(("family", "style"), FACES)
def test_cairosvg_draws_every_glyph_with_the_fallback_fonts(family, style):
    missing = [char for char in GLYPHS
               if _ink(cairosvg.svg2png(bytestring=with_fallback_fonts(
                   _svg(char, family, style)).encode())).sum() < 5]
    assert missing == []


def test_without_them_cairosvg_leaves_out_a_double_bar():
    # (what the fallback is for: cairosvg does not fall back by itself)
    bare = _ink(cairosvg.svg2png(bytestring=_svg("‖", *FACES[0]).encode())).sum()
    fixed = _ink(cairosvg.svg2png(bytestring=with_fallback_fonts(
        _svg("‖", *FACES[0])).encode())).sum()
    assert bare < 5 < fixed


def test_a_glyph_beside_others_keeps_its_text_and_order():
    svg = with_fallback_fonts('<svg xmlns="http://www.w3.org/2000/svg" font-family="Helvetica">'
                              '<text x="0" y="10">a ‖W1‖² &amp; b</text></svg>')
    text = svg.split("<text", 1)[1]
    plain = "".join(part.split(">", 1)[-1] for part in text.split("<"))
    assert plain.replace("&amp;", "&").startswith("a ‖W1‖² & b")
    assert text.count("<tspan") == 2  # each ‖ in a font that has it
