"""A drawing and its files: ``draw``, the step pictures, and the Diagram that renders any format."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import networkx as nx

from .dot import Writer, dot_options
from .errors import DrawError
from .exports import EXPORTS, export
from .figure import to_dot
from .files import make_folder, write_atomically
from .fitting import Fit, band_room, fit, lone_choice, measured
from .graphviz import FORMATS, portable_svg, run_dot
from .options import parse_frame
from .placement import placement
from .schema import validated_once
from .script import as_graph
from .step_bands import band_size, step_bands
from .step_drawing import StepDrawing, draw_steps
from .steps import backward_steps, state_at
from .untangling import untangled
from .views import drawn_graph

__all__ = [
    "GRAPHVIZ_JSON",
    "RENDER_FORMATS",
    "Diagram",
    "draw",
    "render_diagrams",
    "render_steps",
    "step_diagrams",
]


# What a Diagram renders: the IR as the command line exports it (json, graphml),
# and graphviz's formats, its layout JSON under another name.
GRAPHVIZ_JSON = "graphviz-json"
RENDER_FORMATS = tuple(sorted({*FORMATS, *EXPORTS, GRAPHVIZ_JSON}))


class Diagram:
    """A drawing: its DOT ``source``, the IR ``graph``, and renders in any format."""

    def __init__(self, source: str | Callable[[], str], graph: nx.MultiDiGraph) -> None:
        self._source = source  # (or what writes it, when first asked for)
        self.graph = graph
        self.fit: Fit | None = None  # how it fills its frame, if it was fitted to one
        # A step picture drawn with the others (step_drawing): the drawing and its step
        self.steps: tuple[StepDrawing, int] | None = None
        self._cache: dict[str, bytes] = {}

    def __repr__(self) -> str:
        kinds = [kind for _, kind in self.graph.nodes(data="kind")]
        gradients = "with" if self.graph.graph.get("backward_order") else "without"
        return (f"<Diagram of {kinds.count('value')} values and {kinds.count('op')} ops, "
                f"{gradients} gradients; .render('figure.svg') writes it>")

    @property
    def source(self) -> str:
        """The DOT text graphviz draws."""
        if callable(self._source):
            self._source = self._source()
        return self._source

    def pipe(self, format: str = "svg") -> bytes:
        """The picture in a graphviz ``format`` (svg, png, pdf, dot...), or the IR:
        ``json`` is its node-link JSON and ``graphml`` its GraphML, as on the command
        line (graphviz's own layout JSON is ``graphviz-json``)."""
        if format not in self._cache:
            if format in EXPORTS:
                data = export(self.graph, format)
            elif format == "svg" and self.steps is not None:
                drawing, step = self.steps
                data = drawing.svg(step).encode("utf-8")
            else:
                data = run_dot(self.source, "json" if format == GRAPHVIZ_JSON else format)
            if format == "svg":
                data = portable_svg(data)
            if format == "svg" and self.fit is not None:
                # Sized in pixels of the frame it was fitted to (graphviz writes points).
                data = re.sub(rb'^(<svg width="[0-9.]+)pt" height="([0-9.]+)pt"',
                              rb'\1px" height="\2px"', data, count=1, flags=re.M)
            self._cache[format] = data
        return self._cache[format]

    @property
    def svg(self) -> str:
        return self.pipe("svg").decode("utf-8")

    def render(self, path: str | os.PathLike, format: str | None = None) -> Path:
        """Write the picture to ``path`` and return the path written (``save`` is the same).

        The format is ``format``, else ``path``'s extension. As with the graphviz
        package, ``render("graph", format="svg")`` writes ``graph.svg``: the
        format's extension is added unless ``path`` has it already. A path whose
        extension names another format is refused.
        """
        path = Path(path)
        extension = path.suffix.lstrip(".").lower()
        if format is None:
            format = extension
            if not format:
                raise DrawError(f"cannot tell the format of {str(path)!r}: give it an "
                                f"extension or a format (one of {list(RENDER_FORMATS)})")
        elif extension != format.split("-")[-1]:
            if extension in RENDER_FORMATS:
                raise DrawError(f"{str(path)!r} is a .{extension} file but the format is "
                                f"{format!r}: give one of them, or make them agree")
            path = path.with_name(f"{path.name}.{format.split('-')[-1]}")
        if format not in RENDER_FORMATS:
            raise DrawError(f"unknown format: {format!r} (must be one of "
                            f"{list(RENDER_FORMATS)})")
        return write_atomically(path, self.pipe(format))

    save = render

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"image/svg+xml": self.svg, "text/plain": repr(self)}


def draw(graph_or_root: Any, *, names: Mapping[str, Any] | None = None,
         fit: Any = None, **options: Any) -> Diagram:
    """A Diagram of an IR graph, or of the graph behind a Value or Tensor root.

    ``options`` are to_dot's. ``fit="1920x1080"`` lays the graph out to fill
    that frame (direction and folding chosen unless ``rankdir`` is given) and
    sizes the picture to it; the Diagram's ``fit`` tells how (and, as
    ``fit.advice``, what to do if it is too small to read there).
    """
    G = as_graph(graph_or_root, names)
    with validated_once(G):  # (once: the fit and the DOT text take it as checked)
        chosen = _fitted(G, fit, options)
        diagram = Diagram(to_dot(G, **options), G)
    diagram.fit = chosen
    return diagram


def _fitted(G: nx.MultiDiGraph, frame: Any, options: dict[str, Any],
            band: tuple[float, float] | None = None) -> Fit | None:
    """Fit ``G`` to ``frame`` (if any), with a caption ``band`` of that size (points)
    under it if given, setting the options that draw it so."""
    if frame is None:
        return None
    options.pop("frame", None)
    chosen = fit(G, frame, band=band, **options)
    options.update(rankdir=chosen.rankdir, wrap=chosen.wrap, frame=chosen.frame)
    return chosen


def step_diagrams(graph_or_root: Any, *, names: Mapping[str, Any] | None = None,
                  fit: Any = None, captions: bool = True, **options: Any) -> list[Diagram]:
    """One Diagram per state of the backward pass: step 0 (the seed) to the last op,
    all with one layout (options as draw's), each with its caption band (step_bands)
    unless not ``captions`` (the page, which sets the caption beside the picture).
    Their SVGs are drawn together, from one layout in one graphviz run (step_drawing)."""
    G = as_graph(graph_or_root, names)
    with validated_once(G):  # (once: the fit and each picture take it as checked)
        return _step_diagrams(G, fit, captions, options)


def _step_diagrams(G: nx.MultiDiGraph, fit: Any, captions: bool,
                   options: dict[str, Any]) -> list[Diagram]:
    options.pop("step", None)
    drawn = drawn_graph(G, expand=options.get("expand", False),
                        modules=options.get("modules", False),
                        compact_view=options.get("compact", False))
    replay = backward_steps(drawn)  # once, not once per picture
    bands = step_bands(drawn, options.get("theme", "light"), options.get("precision", 4)) \
        if captions and options.get("legend", True) and not (
            options.get("forward_only") or options.get("symbolic")) \
        else [None] * (len(replay) + 1)
    # With one layout to consider, the pictures' own layout measures the fit.
    lone = fit is not None and lone_choice(G, fit, **options)
    band = band_size(bands[0]) if bands[0] else None
    fallback = dict(options)  # (to fit as usual, should the pictures not be drawn together)
    if lone:
        options.update(wrap=1, frame=parse_frame(fit))
    # (fitted with the band under the picture: the frame holds both)
    chosen = None if lone else _fitted(G, fit, options, band)
    if chosen is not None and chosen.advice is not None and bands[0] is not None:
        # Too small for a slide: the band's equations side by side, as wide as the
        # frame allows, leave the picture more of the frame's height.
        wide = step_bands(drawn, options.get("theme", "light"), options.get("precision", 4),
                          room=band_room(drawn, fit))
        tried = dict(fallback)
        again = _fitted(G, fit, tried, band_size(wide[0])) if wide != bands else None
        if again is not None and again.scale > chosen.scale:
            bands, chosen, options = wide, again, tried
    whole = G
    options.pop("modules", None)
    options.pop("compact", None)
    G = drawn
    checked = untangled(G, dot_options(**options))
    pins = placement(G, checked)
    states = [state_at(G, k, replay) for k in range(len(replay) + 1)]
    writer = Writer(G, checked, states[0], pins)
    first = writer.at_step(0, states[0], bands[0])
    # One layout and one graphviz run for all their SVGs, where they can be drawn so:
    # each step drawn as the one before, but for the looks it changes
    drawing = draw_steps(first, [writer.changes(k, states[k - 1], states[k], bands[k])
                                 for k in range(1, len(states))]) if len(states) > 1 else None
    # (each later step's DOT written only if asked for: its SVG is the drawing's)
    diagrams = [Diagram(first, G), *(Diagram(partial(writer.at_step, k, states[k], bands[k]), G)
                                     for k in range(1, len(states)))]
    if lone:
        chosen = measured(G, size=drawing.size, **options) if drawing is not None \
            else _fitted(whole, fit, fallback, band)
    for step, diagram in enumerate(diagrams):
        diagram.fit = chosen
        if drawing is not None:
            diagram.steps = (drawing, step)
    return diagrams


def render_steps(G: Any, directory: str | os.PathLike, **options: Any) -> list[Path]:
    """Write step-000.svg, step-001.svg... into ``directory``; return the paths."""
    format = options.pop("format", "svg")
    return render_diagrams(step_diagrams(G, **options), directory, format=format)


def render_diagrams(diagrams: list[Diagram], directory: str | os.PathLike,
                    format: str = "svg") -> list[Path]:
    """Write step diagrams (step_diagrams's) as step-000.svg, step-001.svg... into
    ``directory``; return the paths."""
    directory = make_folder(directory)
    return [diagram.render(directory / f"step-{k:03d}.{format}", format=format)
            for k, diagram in enumerate(diagrams)]
