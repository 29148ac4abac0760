"""How wide text sets in the faces we draw with: advance widths, per 1000 of the font size."""

from __future__ import annotations

from functools import lru_cache

__all__ = ["FACES", "FULL_EM", "NUMBER_CHARACTERS", "advance", "fit_text", "text_width"]

# Helvetica's advance widths in thousandths of an em; Nimbus Sans (what
# Helvetica resolves to on Linux) and Arial have the same. The printable
# ASCII characters, then the few others our captions and names use.
_HELVETICA = {
    **dict.fromkeys(" !,./:;I[\\]ft", 278), "\"": 355, "'": 191, "`": 333,
    **dict.fromkeys("#$0123456789?L_abdeghnopqu", 556), **dict.fromkeys("%", 889),
    **dict.fromkeys("&ABEKPSVXY", 667), **dict.fromkeys("()-r", 333), "*": 389,
    **dict.fromkeys("+<=>~", 584), "@": 1015, **dict.fromkeys("CDHNRUw", 722),
    **dict.fromkeys("FTZ", 611), **dict.fromkeys("GOQ", 778), "J": 500, "M": 833, "W": 944,
    "^": 469, **dict.fromkeys("cksvxyz", 500), **dict.fromkeys("ijl", 222), "m": 833,
    "{": 334, "|": 260, "}": 334,
    **dict.fromkeys("\u2212\u00d7\u00f7\u00b1", 584),  # − × ÷ ±
    "\u00b7": 278, "\u2202": 476, **dict.fromkeys("\u00b9\u00b2\u00b3", 333),  # · ∂ ¹ ² ³
    "\u2026": 1000, "\u2013": 556, "\u2014": 1000, "\u00b0": 400,  # … – — °
    "\u03a3": 618, "\u03c3": 617, "\u03bb": 500, "\u0394": 612,  # Σ σ λ Δ
    "\u2190": 1000, "\u2192": 1000,  # ← →
}
# Times Italic's, the face of names (Nimbus Roman Italic's are the same).
_TIMES_ITALIC = {
    **dict.fromkeys(" ,.", 250), **dict.fromkeys("!:;()-`I", 333), "\"": 420, "'": 214,
    **dict.fromkeys("#$0123456789?*_abdghnopqu", 500), "%": 833, "&": 778,
    **dict.fromkeys("+<=>", 675), "@": 920, **dict.fromkeys("ABEFPRVX", 611),
    **dict.fromkeys("CK", 667), **dict.fromkeys("DGHOQU", 722), "J": 444, "L": 556,
    **dict.fromkeys("MW", 833), "N": 667, "S": 500, **dict.fromkeys("TYZ", 556),
    **dict.fromkeys("[]", 389), "\\": 278, "^": 422, **dict.fromkeys("cekvxy", 444),
    **dict.fromkeys("fijlt/", 278), "m": 722, **dict.fromkeys("rsz", 389), "w": 667,
    "{": 400, "|": 275, "}": 400, "~": 541,
    **dict.fromkeys("\u2212\u00d7\u00f7\u00b1", 675), "\u00b7": 250, "\u2202": 500,
    **dict.fromkeys("\u00b9\u00b2\u00b3", 300), "\u2026": 889, "\u2013": 500, "\u2014": 889,
    "\u00b0": 400, "\u03a3": 594, "\u03c3": 493, "\u03bb": 433, "\u0394": 667,
    "\u2190": 722, "\u2192": 722,
}
# What numbers are made of (digits, exponent, sign, point, nan, inf): the
# cells of the figures' tables are sized from these alone, every other
# character counted as a full em, so that no cell is ever too narrow.
NUMBER_CHARACTERS = "0123456789e.\u2212+naif "
FULL_EM = 1000  # a character a face's table lacks: as wide as the font is high

FACES: dict[str, dict[str, int]] = {
    "sans": _HELVETICA,  # numbers and text: style.FONT
    "serif": _TIMES_ITALIC,  # names, set in italic: style.NAME_FONT
    "numbers": {character: _HELVETICA[character] for character in NUMBER_CHARACTERS},
}


@lru_cache(maxsize=1 << 16)
def advance(text: str, face: str = "sans") -> int:
    """The advance width of ``text`` in ``face`` ("sans", "serif" or "numbers"), in
    thousandths of the font size; a character the face's table lacks counts FULL_EM."""
    widths = FACES[face]
    return sum(widths.get(character, FULL_EM) for character in text)


def text_width(text: str, size: float, face: str = "sans") -> float:
    """How wide ``text`` sets at ``size`` (points or pixels: the width is in the same unit)."""
    return advance(text, face) * size / 1000


def fit_text(text: str, width: float, size: float, face: str = "sans") -> str:
    """``text`` if it fits ``width`` at ``size``, else as much of it as fits with "…"
    after it (at least its first character)."""
    if text_width(text, size, face) <= width:
        return text
    room = width * 1000 / size - advance("\u2026", face)
    kept, used = 1, advance(text[0], face)
    while kept < len(text) and used + advance(text[kept], face) <= room:
        used += advance(text[kept], face)
        kept += 1
    return text[:kept] + "\u2026"
