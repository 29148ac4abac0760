"""manim's Text, its SVG read a glyph at a time rather than as a whole document.

manim makes a Text by having Pango write an SVG (a few milliseconds) and then
parsing that SVG with svgelements into one mobject per glyph (20-100 ms for a
caption's line: nine tenths of the text's cost). Pango's SVG is plain: each
glyph's outline once, as a ``<symbol>``, then a ``<use x= y=>`` for each time
it is set, inside groups that give the fill. QuickText reads that document
with the standard library's XML parser, has manim's own parser make each
distinct glyph (with its fill) once a process, from a small SVG of the same
frame that sets it at the origin, and sets a copy of it at each of its places.
Everything else is manim's Text (the Pango call, the glyphs' closed outlines,
the scale, the centring). The points agree with manim's own to rounding
(tests/test_quick_text.py).
"""

from __future__ import annotations

import copy
import enum
import pathlib
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import Any

import numpy as np
import svgelements as se
from manim import ORIGIN, RIGHT, ManimColor, Text, VMobject
from manim.mobject.svg.svg_mobject import SVGMobject, VMobjectFromSVGPath

__all__ = ["QuickText"]

SVG = "{http://www.w3.org/2000/svg}"
HREF = "{http://www.w3.org/1999/xlink}href"
FILL = ("fill", "fill-opacity", "style")  # what a group gives the glyphs inside it

# The glyphs made: (the document's frame, the fill, the outline) -> a glyph at the
# origin (None for one with no outline, a space's), shared by every QuickText.
_GLYPHS: dict[tuple, VMobject | None] = {}
_SCALES: dict[tuple, float] = {}  # the frame -> how much manim's parser scales it
_AT_MOST = 20_000
_IMMUTABLE = (int, float, str, bool, type(None), enum.Enum)
ET.register_namespace("", SVG[1:-1])
ET.register_namespace("xlink", HREF[1:HREF.index("}")])


class QuickText(Text):
    """A Text (the same arguments, the same mobject) made faster."""

    def generate_mobject(self) -> QuickText:
        root = ET.parse(self.get_file_path()).getroot()
        # Anything but glyphs set in groups (a line Pango draws, an underline's) is read
        # by manim's parser, as is a text not centred (the glyphs are flipped in place).
        if not self.should_center or not _only_glyphs(root):
            return super().generate_mobject()
        frame = tuple(sorted((k, v) for k, v in root.attrib.items() if "}" not in k))
        outlines = {symbol.get("id"): _outline(symbol) for symbol in root.iter(f"{SVG}symbol")}
        if len(_GLYPHS) > _AT_MOST:
            _GLYPHS.clear()
        scale = _scale(self, frame)
        settings = (repr(self.svg_default), repr(self.path_string_config))
        placed = [((frame, fill, outlines.get(use.get(HREF, "")[1:], ""), *settings), use)
                  for use, fill in _uses(root, ())]
        _make(self, [key for key, _ in placed if key not in _GLYPHS])
        made: list[VMobject] = []
        for key, use in placed:
            glyph = _GLYPHS[key]
            if glyph is not None:
                made.append(_placed(glyph, float(use.get("x", 0)) * scale,
                                    -float(use.get("y", 0)) * scale))
        self.add(*made)
        self.id_to_vgroup_dict = {}
        self.rotate_sheen_direction(np.pi, RIGHT, family=False)  # (as the flip turns it)
        return self


def _placed(glyph: Glyph, x: float, y: float) -> Glyph:
    """A copy of ``glyph`` moved by (x, y)."""
    placed = copy.deepcopy(glyph)
    placed.points += np.array([x, y, 0.0])
    return placed


class Glyph(VMobjectFromSVGPath):
    """A glyph of a QuickText, which copies itself quickly: its arrays its own, what
    else it holds shared when it cannot change in place. (manim's deep copy of every
    attribute took a third of a text's making, and much of a clip's story, whose
    every Transform copies its texts and their targets.)"""

    def __deepcopy__(self, memo: dict[int, Any]) -> Glyph:
        copied = self.__class__.__new__(self.__class__)
        memo[id(self)] = copied
        for name, value in self.__dict__.items():
            if isinstance(value, np.ndarray):
                value = value.copy()
            elif isinstance(value, list) and not value:
                value = []
            elif type(value) is ManimColor:  # (its value an array; a third of the time)
                value = memo.get(id(value)) or _copied_colour(value, memo)
            elif not isinstance(value, _IMMUTABLE):
                value = copy.deepcopy(value, memo)
            copied.__dict__[name] = value
        copied.original_id = str(id(self))
        return copied

    def get_subpaths_from_points(self, points: np.ndarray) -> list[np.ndarray]:
        """manim's subpaths of ``points``, split where its vectorised comparison (the
        one its camera draws by) finds two anchors apart, rather than by a call of
        np.allclose a curve, as manim's Transform would align a glyph: the same
        subpaths, a tenth of the time."""
        nppcc = self.n_points_per_cubic_curve
        return [points[start:end] for start, end
                in self.get_subpath_split_indices_from_points(points) if end - start >= nppcc]


def _copied_colour(colour: ManimColor, memo: dict[int, Any]) -> ManimColor:
    """A deep copy of a manim colour (which holds an array), made directly."""
    copied = memo[id(colour)] = ManimColor.__new__(ManimColor)
    copied.__dict__.update((name, value.copy() if isinstance(value, np.ndarray)
                            else copy.deepcopy(value, memo))
                           for name, value in vars(colour).items())
    return copied


def _outline(symbol: ET.Element) -> str:
    """A glyph's ``<symbol>`` as text, without the id Pango numbers it by in its document
    (the same glyph is glyph0-3 in one text and glyph0-7 in the next)."""
    symbol = copy.copy(symbol)
    symbol.attrib.pop("id", None)
    return ET.tostring(symbol, encoding="unicode")


def _only_glyphs(root: ET.Element) -> bool:
    """Whether the document sets nothing but glyphs (``<use>``) in groups."""
    return all(child.tag == f"{SVG}defs" or (child.tag in (f"{SVG}g", f"{SVG}use") and
                                              _only_glyphs(child)) for child in root)


def _uses(element: ET.Element, fill: tuple) -> Any:
    """Each ``<use>`` below ``element`` in document order, with the fill of the groups
    around it (their fill attributes, outermost first)."""
    for child in element:
        if child.tag == f"{SVG}defs":
            continue
        if child.tag == f"{SVG}use":
            yield child, fill
        elif child.tag == f"{SVG}g":
            own = tuple((k, v) for k, v in child.attrib.items() if k in FILL)
            yield from _uses(child, (*fill, own) if own else fill)


def _document(frame: tuple, fill: tuple, body: str) -> str:
    attributes = "".join(f' {k}="{v}"' for k, v in frame)
    opened = "".join("<g" + "".join(f' {k}="{v}"' for k, v in own) + ">" for own in fill)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" '
            f'xmlns:xlink="http://www.w3.org/1999/xlink"{attributes}>'
            f"{opened}{body}{'</g>' * len(fill)}</svg>")


def _parsed(text: Text, document: str) -> list[VMobject]:
    """The mobjects manim's parser makes of ``document``, styled as ``text``'s own."""
    with tempfile.TemporaryDirectory() as folder:
        file = pathlib.Path(folder) / "glyph.svg"
        file.write_text(document, encoding="utf-8")
        parser = SVGMobject.__new__(SVGMobject)
        parser.svg_default, parser.path_string_config = text.svg_default, text.path_string_config
        parser.file_name = file
        tree = parser.modify_xml_tree(ET.parse(file))
        modified = file.with_name("modified.svg")
        tree.write(modified)
        mobjects, _ = parser.get_mobjects_from(se.SVG.parse(modified))
    return mobjects


def _make(text: Text, keys: list[tuple]) -> None:
    """Make the glyphs of ``keys`` (frame, fill, outline, settings), each set at the
    origin as manim's parser makes it: those of one fill from one document, whose
    ``<use>`` each make one mobject, a glyph with an outline (a space has none)."""
    by_fill: dict[tuple, list[tuple]] = {}
    for key in dict.fromkeys(keys):
        paths = ET.fromstring(key[2]).iter(f"{SVG}path") if key[2] else ()
        if any(path.get("d", "").strip() for path in paths):
            by_fill.setdefault(key[:2], []).append(key)
        else:
            _GLYPHS[key] = None
    for (frame, fill), todo in by_fill.items():
        mobjects = _parsed(text, _document(frame, fill, _setting(key[2] for key in todo)))
        if len(mobjects) != len(todo):  # (not one mobject a glyph: each read alone)
            mobjects = [(_parsed(text, _document(frame, fill, _setting([key[2]]))) or [None])[0]
                        for key in todo]
        for key, glyph in zip(todo, mobjects, strict=True):
            _GLYPHS[key] = glyph if glyph is None else _upright(glyph)


def _setting(outlines: Iterable[str]) -> str:
    """A document's body that sets each glyph of ``outlines`` (their ``<symbol>``s) once,
    at the origin."""
    symbols, uses = [], []
    for number, outline in enumerate(outlines):
        symbol = ET.fromstring(outline)
        symbol.set("id", f"g{number}")
        symbols.append(ET.tostring(symbol, encoding="unicode"))
        uses.append(f'<use xlink:href="#g{number}" x="0" y="0"/>')
    return f"<defs>{''.join(symbols)}</defs>{''.join(uses)}"


def _upright(glyph: VMobject) -> VMobject:
    """A glyph as parsed, turned up: y runs down the page in SVG and up in manim, which
    flips the whole text about its centre. Each glyph is flipped here about the origin
    instead, once, which differs from that by a shift (of all the glyphs alike), and
    the text is centred after."""
    glyph.path_obj = None
    glyph.__class__ = Glyph
    return glyph.flip(RIGHT, about_point=ORIGIN)


def _scale(text: Text, frame: tuple) -> float:
    """How much manim's parser scales a document with ``frame`` (its width in pt over
    its view box, read from a line 1000 long)."""
    if frame not in _SCALES:
        line = _parsed(text, _document(frame, (), '<path d="M 0 0 L 1000 0" '
                                       'style="fill:none;stroke:rgb(0%,0%,0%);"/>'))
        _SCALES[frame] = line[0].width / 1000 if line else 1.0
    return _SCALES[frame]
