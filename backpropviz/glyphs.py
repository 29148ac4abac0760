"""Every glyph drawn when an SVG is converted by cairosvg.

cairosvg sets each text in the first font its ``font-family`` names and does
no fallback: a character that font lacks (``‖`` and ``◀`` in the Helvetica and
Times that fontconfig gives, Nimbus Sans and Nimbus Roman) is left out. Here each
such character is set in a font that has it, one fontconfig chooses, in a
``<tspan>`` of its own. Browsers and graphviz (pango) fall back by themselves.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import lru_cache
from html import unescape

__all__ = ["with_fallback_fonts"]

_TEXT = re.compile(r"(<text\b[^>]*>)([^<]*)(</text>)")
_FAMILY = re.compile(r'font-family="([^"]*)"')
_STYLE = re.compile(r'font-style="([^"]*)"')
# Fonts tried first for a missing glyph (the same look as the sans text), then any.
_PREFERRED = ("DejaVu Sans", "Liberation Sans", "DejaVu Serif", "DejaVu Sans Mono")


def with_fallback_fonts(svg: str) -> str:
    """``svg`` with each character its text's font lacks set in one that has it."""
    if shutil.which("fc-list") is None:
        return svg  # no fontconfig to ask: as it was
    root = _FAMILY.search(svg)
    default = _first(root.group(1)) if root else "sans-serif"

    def fixed(match: re.Match) -> str:
        start, text, end = match.groups()
        if text.isascii():
            return match.group(0)
        family = _FAMILY.search(start)
        style = _STYLE.search(start)
        face = _first(family.group(1)) if family else default
        italic = bool(style) and style.group(1) == "italic"
        plain = unescape(text)
        if all(_has(face, italic, char) for char in set(plain) if not char.isascii()):
            return match.group(0)
        runs, run, run_font = [], "", None
        for char in plain:
            font = None if char.isascii() or _has(face, italic, char) else _fallback(char)
            if font != run_font and run:
                runs.append((run, run_font))
                run = ""
            run, run_font = run + char, font
        runs.append((run, run_font))
        return start + "".join(_escaped(part) if font is None else
                               f'<tspan font-family="{font}">{_escaped(part)}</tspan>'
                               for part, font in runs) + end

    return _TEXT.sub(fixed, svg)


def _first(families: str) -> str:
    return families.split(",")[0].strip().strip("'\"") or "sans-serif"


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@lru_cache(maxsize=256)
def _font_of(face: str, italic: bool) -> str:
    """The family fontconfig sets ``face`` in (Helvetica: Nimbus Sans, say)."""
    pattern = face + (":italic" if italic else "")
    return _run("fc-match", "-f", "%{family[0]}", pattern) or face


@lru_cache(maxsize=1024)
def _has(face: str, italic: bool, char: str) -> bool:
    return bool(_run("fc-list", f"{_font_of(face, italic)}:charset={ord(char):x}", "family"))


@lru_cache(maxsize=1024)
def _fallback(char: str) -> str | None:
    """A family that has ``char`` (None: no font here has it)."""
    families = [line.split(",")[0] for line in
                _run("fc-list", f":charset={ord(char):x}", "family").splitlines() if line]
    for family in _PREFERRED:
        if family in families:
            return family
    return min(families) if families else None


def _run(*command: str) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=10,
                              check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
