"""DOT's syntax, as the writers spell it: sizes, quoted names and attribute lists."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["attrs", "pt", "quote"]

# The attributes whose value may be an HTML-like label (<...>), written unquoted.
_HTML_LABELS = ("label", "xlabel")


def pt(points: float) -> str:
    """A size as DOT text: ``14`` for 14.0, ``2.6`` for 2.6."""
    return f"{points:g}"


def quote(text: str) -> str:
    """A name or value as a DOT string: quoted, its backslashes and quotes escaped."""
    if "\\" in text or '"' in text:
        text = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def attrs(attributes: Mapping[str, str]) -> str:
    """An attribute list, ``[key="value" ...]``; an HTML-like label as it is."""
    parts = []
    for key, value in attributes.items():
        if key in _HTML_LABELS and value[:1] == "<" and value[-1:] == ">":
            parts.append(f"{key}={value}")
        else:
            parts.append(f"{key}={quote(value)}")
    return "[" + " ".join(parts) + "]"
