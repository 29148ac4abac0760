"""The start of our one-file HTML pages, and a theme's colours as CSS variables for them."""

from __future__ import annotations

from html import escape

from .style import Theme

__all__ = ["dead_cell_css", "page_head", "theme_css"]


def page_head(title: str, style: str) -> str:
    """The start of one of our one-file pages, up to its ``<body>``, ``style`` inline."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="backpropviz">
<title>{escape(title)}</title>
<link rel="icon" href="data:,">
<style>
{style}</style>
</head>"""


def theme_css(theme: Theme) -> str:
    """The theme's colours as the CSS variables of a page (``--bg``, ``--text``, ``--grad``...)."""
    colors = {"bg": theme.backdrop, "text": theme.text, "grad": theme.grad, "muted": theme.muted,
              "edge": theme.edge, "panel": theme.op_fill, "line": theme.node_line,
              "hl-line": theme.highlight_line, "hl-fill": theme.highlight_fill,
              "label-fill": theme.label_fill, "dead-text": theme.dead_text,
              "dead-fill": theme.dead_fill, "saved": theme.saved}
    return ":root{" + "".join(f"--{key}:{value};" for key, value in colors.items()) + "}"


def dead_cell_css(theme: Theme) -> str:
    """A dashed frame around each entry a gate zeroed (drawn on the theme's dead fill),
    so that colour is not all that marks it."""
    return (f'#stage polygon[fill="{theme.dead_fill}"]{{stroke:{theme.dead_text};'
            "stroke-width:1.2px;stroke-dasharray:3 2}")
