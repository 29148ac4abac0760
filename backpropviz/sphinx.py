"""Sphinx: ``.. backpropviz:: script.py`` draws a script's graph when the docs are built.

In ``conf.py``: ``extensions = ["backpropviz.sphinx"]`` (Jupyter Book: under
``sphinx: extra_extensions``). Then, in a page::

    .. backpropviz:: ../examples/d2l_mlp.py
       :rankdir: BT
       :theme: dark

The script's path is relative to the page (or, with a leading ``/``, to the
source folder); the page is rebuilt whenever the script changes, so course
notes show what their scripts compute now. Options, as on the command line
(the same declaration, ``backpropviz.options.Options``): ``:rankdir:``,
``:theme:``, ``:precision:``, ``:fit:`` (``1920x1080``: laid out to fill that
frame), the flags ``:expand:``, ``:modules:``, ``:compact:``, ``:symbolic:``,
``:show-constants:`` and ``:forward-only:``; and ``:roots:`` (ROOT names,
space-separated), ``:format:`` (``svg``, the default, ``png``, or ``html`` for
the step-through page inline, which fits itself to the page), ``:steps:`` (one
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
from .errors import BackpropvizError
from .options import FIGURE, KINDS, PAGE, Options, option_fields
from .output import prepare, show, write, write_steps
from .schema import validated_once
from .script import graph_of_script

__all__ = ["BackpropvizDirective", "setup"]

# What a page of the docs can show: a picture, or the step-through page inline.
FORMATS = tuple(fmt for fmt in (*KINDS[FIGURE], *KINDS[PAGE]) if fmt in ("svg", "png", "html"))


def _spec(field: Any) -> Any:
    """A directive option for an Options field: a flag, a choice, or a value."""
    if field.type in ("bool", bool):
        return directives.flag
    choices = field.metadata["argparse"].get("choices")
    if choices:
        return lambda text: _one_of(text, choices)
    if field.name == "precision":
        return directives.positive_int
    if field.name == "script_timeout":
        return float  # seconds; Options refuses one that is not positive
    return directives.unchanged_required


class BackpropvizDirective(SphinxDirective):
    """``.. backpropviz:: SCRIPT``: the picture of the script's graph."""

    required_arguments = 1
    option_spec = {  # noqa: RUF012 (docutils reads it from the class)
        **{field.name.replace("_", "-"): _spec(field) for field in option_fields()
           # (a training run is recorded from the command line: --iterations)
           if field.name not in ("timeout", "quality", "phase", "speed", "jobs", "iterations",
                                 "every", "iteration")},
        "roots": directives.unchanged,
        "format": lambda text: _one_of(text, FORMATS),
        "steps": directives.flag,
        "alt": directives.unchanged,
    }

    def run(self) -> list[nodes.Node]:
        relative, script = self.env.relfn2path(self.arguments[0], self.env.docname)
        self.env.note_dependency(relative)  # the page is rebuilt when the script changes
        fmt = self.options.get("format", "svg")
        alt = self.options.get("alt", f"the graph of {self.arguments[0]}")
        try:
            options = self._options()
            prepare(fmt, options, steps="steps" in self.options)
            G = graph_of_script(script, self.options.get("roots", "").split(), quiet=True,
                                backward=not options.forward_only,
                                script_timeout=options.script_timeout,
                                fold=not options.keep_sums)
            with validated_once():  # (G was, where graph_of_script built it)
                if fmt == "html":
                    page = show(G, options, format="html")._repr_html_()
                    return [nodes.raw("", page, format="html")]
                folder = self._folder(script, fmt)
                if "steps" in self.options:
                    paths = write_steps(G, folder, options, format=fmt)
                else:
                    paths = [write(G, folder / f"{Path(script).stem}.{fmt}", options)]
        except BackpropvizError as error:
            raise self.error(f"backpropviz: {self.arguments[0]}: {error}") from None
        page_folder = Path(self.env.doc2path(self.env.docname)).parent
        return [nodes.image(uri=os.path.relpath(path, page_folder), alt=alt,
                            classes=["backpropviz"]) for path in paths]

    def _options(self) -> Options:
        """The directive's options as the library's (flags given are true)."""
        given: dict[str, Any] = {}
        for field in option_fields():
            name = field.name.replace("_", "-")
            if name in self.options:
                value = self.options[name]
                given[field.name] = True if value is None else value
        return Options(**given)
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
