"""Sphinx: ``.. backpropviz:: script.py`` draws a script's graph when the docs are built.

In ``conf.py``: ``extensions = ["backpropviz.sphinx"]`` (Jupyter Book: under
``sphinx: extra_extensions``). Then, in a page::

    .. backpropviz:: ../examples/d2l_mlp.py
       :rankdir: BT
       :theme: dark

The script's path is relative to the page (or, with a leading ``/``, to the
source folder); the page is rebuilt whenever the script changes, so course
notes show what their scripts compute now. Options, as on the command line:
``:roots:`` (ROOT names, space-separated), ``:rankdir:``, ``:theme:``,
``:precision:``, ``:fit:`` (``1920x1080``: laid out to fill that frame, as
``--fit``), ``:format:`` (``svg``, the default, ``png``, or ``html`` for the
step-through page inline, which fits itself to the page), ``:steps:`` (one
picture per backward step, in order), and ``:alt:``. A script that gives no
picture fails the directive with the command line's one sentence.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from . import __version__
from .diagram import draw, render_steps
from .errors import BackpropvizError
from .html import Page, to_html
from .script import graph_of_script
from .style import RANKDIRS, THEMES
from .views import drawn_graph

__all__ = ["BackpropvizDirective", "setup"]

FORMATS = ("svg", "png", "html")


class BackpropvizDirective(SphinxDirective):
    """``.. backpropviz:: SCRIPT``: the picture of the script's graph."""

    required_arguments = 1
    option_spec = {  # noqa: RUF012 (docutils reads it from the class)
        "roots": directives.unchanged,
        "rankdir": lambda text: _one_of(text, RANKDIRS),
        "theme": lambda text: _one_of(text, sorted(THEMES)),
        "precision": directives.positive_int,
        "fit": directives.unchanged_required,
        "format": lambda text: _one_of(text, FORMATS),
        "steps": directives.flag,
        "alt": directives.unchanged,
    }

    def run(self) -> list[nodes.Node]:
        relative, script = self.env.relfn2path(self.arguments[0], self.env.docname)
        self.env.note_dependency(relative)  # the page is rebuilt when the script changes
        fmt = self.options.get("format", "svg")
        options = {"rankdir": self.options.get("rankdir", "LR"),
                   "theme": self.options.get("theme", "light"),
                   "precision": self.options.get("precision", 4)}
        alt = self.options.get("alt", f"the graph of {self.arguments[0]}")
        try:
            G = graph_of_script(script, self.options.get("roots", "").split(), quiet=True)
            if fmt == "html":
                page = Page(to_html(drawn_graph(G), **options))._repr_html_()
                return [nodes.raw("", page, format="html")]
            folder = self._folder(script, fmt)
            if "fit" in self.options:
                options["fit"] = self.options["fit"]
                if "rankdir" not in self.options:
                    options["rankdir"] = None  # the fit chooses, as with --fit
            if "steps" in self.options:
                paths = render_steps(G, folder, format=fmt, **options)
            else:
                paths = [draw(G, **options).render(folder / f"{Path(script).stem}.{fmt}")]
        except BackpropvizError as error:
            raise self.error(f"backpropviz: {self.arguments[0]}: {error}") from None
        page_folder = Path(self.env.doc2path(self.env.docname)).parent
        return [nodes.image(uri=os.path.relpath(path, page_folder), alt=alt,
                            classes=["backpropviz"]) for path in paths]

    def _folder(self, script: str, fmt: str) -> Path:
        """Where this picture is drawn: a folder of the build's own, named by the
        script, its text and the options (the builder copies images from there)."""
        key = hashlib.sha256(Path(script).read_bytes())
        key.update(repr((sorted(self.options.items()), fmt, __version__)).encode())
        folder = Path(self.env.app.doctreedir) / "backpropviz" / (
            f"{Path(script).stem}-{key.hexdigest()[:12]}")
        folder.mkdir(parents=True, exist_ok=True)
        return folder


def _one_of(text: str | None, choices: Any) -> str:
    """An option's value, one of ``choices`` whatever its case (``bt`` is ``BT``)."""
    by_case = {choice.lower(): choice for choice in choices}
    value = (text or "").strip().lower()
    if value not in by_case:
        raise ValueError(f"{text!r} is not one of {', '.join(choices)}")
    return by_case[value]


def setup(app: Any) -> dict[str, Any]:
    """Sphinx's entry point: registers the directive."""
    app.add_directive("backpropviz", BackpropvizDirective)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
