"""Names and equations as graphviz's HTML-like labels: one typesetting for boxes,
headings, continuation marks and the step slides' equations."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from .captions import IDENTIFIER, name_parts
from .graphviz import SUBSCRIPT_SCALE
from .style import EXPRESSION_PT, LEGEND_PT, NAME_FONT, NAME_PT, Theme

__all__ = ["GAP", "equation_html", "expression_html", "font", "name_html", "runs"]

GAP = "&#160;"  # a space graphviz keeps (it trims plain ones at the ends of a run)


def font(text: str, color: str, size: float | None = None, face: str | None = None) -> str:
    extra = f' POINT-SIZE="{size:g}"' if size else ""
    extra += f' FACE="{face}"' if face else ""
    return f'<FONT COLOR="{color}"{extra}>{text}</FONT>'


def expression_html(text: str, theme: Theme, color: str | None = None,
                     pt: float = EXPRESSION_PT) -> str:
    """An expression heading typeset as the boxes' names are: ``W1 x + b1`` as
    W₁ x + b₁, ``lambd/2`` as λ/2, one-letter names in italics, words (relu,
    tanh) upright; in the headings' grey unless ``color``."""
    return font(_typeset(text, lambda part: escape(part).replace(" ", GAP)),
                color or theme.muted, pt, NAME_FONT)


def equation_html(text: str, color: str, pt: float) -> str:
    """A caption's equation (``∂L/∂W1 = ∂L/∂z · xᵀ = …``) set as the book sets its
    mathematics: in the names' serif, the names typeset as the boxes' are (italic,
    W₁ with its subscript), numbers and words upright. (One family for the whole
    line: graphviz places each run of a label by its own estimate of the run's
    width, and runs of two families drift apart.)"""
    return font(_typeset(text, lambda part: escape(part).replace(" ", GAP), names_only=True),
                color, pt, NAME_FONT)


def runs(text: str, names_only: bool = False) -> list[tuple[str, str]]:
    """``text`` cut into runs to typeset, each ``(kind, text)``: "text" as it is,
    "name" a name's letter or word (one letter set in italics), "index" its index
    (W1 -> ("name", "W"), ("index", "1")). With ``names_only``, a word (the, seed,
    ReLU) stays text. Every view that typesets an equation reads these."""
    parts: list[tuple[str, str]] = []
    last = 0
    for match in IDENTIFIER.finditer(text):
        base, sub = name_parts(match.group())
        if names_only and len(base) > 1 and not sub:
            continue
        parts += [("text", text[last:match.start()]), ("name", base)]
        if sub:
            parts.append(("index", sub))
        last = match.end()
    parts.append(("text", text[last:]))
    return [(kind, part) for kind, part in parts if part]


def _typeset(text: str, between: Callable[[str], str], names_only: bool = False) -> str:
    """``text`` as HTML-like label text (runs()): one-letter names in italics, an
    index as a subscript no smaller than the legend, the text through ``between``."""
    sub_pt = LEGEND_PT / SUBSCRIPT_SCALE  # (portable_svg sets a subscript smaller)
    html = {"text": between,
            "name": lambda part: f"<I>{escape(part)}</I>" if len(part) == 1 else escape(part),
            "index": lambda part: (f'<SUB><FONT POINT-SIZE="{sub_pt:.1f}">{escape(part)}'
                                   "</FONT></SUB>")}
    return "".join(html[kind](part) for kind, part in runs(text, names_only))


def name_html(name: str, theme: Theme) -> str:
    """A name in the book's style: ``W1`` as an italic W with subscript 1; a name
    the script wrote as an expression (``lambd/2``) typeset as headings are."""
    if not IDENTIFIER.fullmatch(name):
        return expression_html(name, theme, theme.text, NAME_PT)
    base, sub = name_parts(name)
    body = f"<I>{escape(base)}</I>" + (f"<SUB>{escape(sub)}</SUB>" if sub else "")
    return font(body, theme.text, NAME_PT, NAME_FONT)
