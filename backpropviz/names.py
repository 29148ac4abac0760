"""How values are written: the names of a script's values and the expressions of
unnamed ones, as every view writes them (boxes' headings, captions, pages, clips).

A value's name is a ``Name``: its Unicode text, its TeX and how tightly it binds.
A label is set as the script wrote it, its trailing index as a subscript (W1 as W₁)
and its Greek names as letters; an unnamed value is written as the expression that
computed it (``o − y``), shortened with "…" where its box has no room for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from string import Template
from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .formatting import MAX_ITEMS, format_array, number_text, superscript
from .ir import operand_edges
from .metrics import text_width
from .ops import ATOM, POSTFIX
from .style import EXPRESSION_PT, VALUE_PT

__all__ = [
    "IDENTIFIER",
    "SMALL_ENTRIES",
    "Heading",
    "Name",
    "differentiated",
    "exponent_names",
    "filled",
    "heading_room",
    "headings",
    "index_name",
    "label_name",
    "name_parts",
    "name_runs",
    "number_name",
    "op_expression",
    "parenthesised",
    "partial_name",
    "product_sign",
    "subscripted",
    "text_template",
    "typeset",
    "value_names",
]


@dataclass(frozen=True)
class Name:
    """How a value is written: Unicode ``text``, LaTeX ``tex``, and how tightly it binds
    (``precedence``: SIGNED < SUM < PRODUCT < POSTFIX < ATOM): where it needs parentheses."""

    text: str
    tex: str
    precedence: int = ATOM


# A worked caption writes out the numbers of operands of at most this many entries, and
# results of at most RESULT_ENTRIES (worked.py); larger ones are read on the picture.
SMALL_ENTRIES = 6

# Unnamed values are written as the expression that made them, as long as it has
# room: as wide as its box's numbers, and at least this wide (points, at the headings'
# size: some 26 characters), before its operands become "…".
_LEAST_ROOM = 13 * EXPRESSION_PT
_CELL_GAP = 8.0  # a table cell's padding and spacing, points
_ELLIPSIS = Name("…", r"\ldots")
# Greek letters as a script spells them (``lambda`` is Python's keyword: the book
# writes ``lambd``), drawn as the letter in every view: lambd / 2 is λ/2.
_GREEK_LETTERS = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε",
                  "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ",
                  "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "psi": "ψ", "omega": "ω"}
_GREEK = {**_GREEK_LETTERS, "lambd": "λ", "lmbda": "λ", "lam": "λ", "eps": "ε"}
_GREEK_TEX = {letter: "\\" + name for name, letter in _GREEK_LETTERS.items()}


# A name with a trailing index, set as a subscript by the picture, the page and
# the video alike: letters, then digits (W1, x_1, w1_11: the groups of digits
# are the index) or an underscore and one letter (x_i, h_t). Any other
# snake_case name (total_loss, X_train, x_in) is a word, written as it is.
_INDEXED_NAME = re.compile(r"([A-Za-z]+)(?:_?([0-9]+(?:_[0-9]+)*)|_([A-Za-z]))")
# A name in a text (o − y, W1 x + b1): a letter or _, then letters, digits and
# underscores, not part of a number (the e of 1e-3) nor of a path after its first name
# (model.fc1.weight: an attribute is written as the script wrote it, fc1, not f and c₁).
IDENTIFIER = re.compile(r"(?<![0-9.A-Za-z_])[A-Za-z_][A-Za-z0-9_]*")


def name_parts(label: str) -> tuple[str, str]:
    """A name's base and subscript: ``W1`` -> ("W", "1"), ``w1_11`` -> ("w", "1,11"),
    ``x_i`` -> ("x", "i"), ``lambd`` -> ("λ", ""), ``eta2`` -> ("η", "2");
    ``total_loss`` -> ("total_loss", "")."""
    match = _INDEXED_NAME.fullmatch(label)
    if match:
        base = match.group(1)
        return _GREEK.get(base, base), (match.group(2) or match.group(3)).replace("_", ",")
    return _GREEK.get(label, label), ""


def typeset(label: str) -> str:
    """A label as every view writes it in plain text: its Greek names as letters
    (``lambd/2`` -> ``λ/2``), the rest as the script wrote it."""
    return IDENTIFIER.sub(lambda match: _GREEK.get(match.group(), match.group()), label)


# Unicode's subscript characters: the digits, and the letters it has (not b, c, d…).
_SUBSCRIPTS = dict(zip("0123456789aehijklmnoprstuvx,", "₀₁₂₃₄₅₆₇₈₉ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ,",
                       strict=True))


def subscripted(text: str) -> str:
    """A text with names in it as a view that cannot typeset writes it: each name's
    index in subscript characters, as the boxes set it (``∂L/∂W1 = x1ᵀ`` ->
    ``∂L/∂W₁ = x₁ᵀ``, ``w1_11`` -> ``w₁,₁₁``, ``h_t`` -> ``hₜ``), Greek names as letters.
    An index Unicode has no subscript for (``x_b``) stays as the script wrote it."""
    def one(match: re.Match) -> str:
        base, sub = name_parts(match.group())
        if sub and all(char in _SUBSCRIPTS for char in sub):
            return base + "".join(_SUBSCRIPTS[char] for char in sub)
        return base if not sub else match.group()

    return IDENTIFIER.sub(one, text)


def name_runs(text: str) -> list[tuple[str, str]]:
    """A text with names in it as runs of (text, the subscript after it): ``W1 x + b1``
    -> [("W", "1"), (" x + b", "1"), ("", "")], Greek names as letters."""
    runs, last = [], 0
    for match in IDENTIFIER.finditer(text):
        base, sub = name_parts(match.group())
        runs.append((text[last:match.start()] + base, sub))
        last = match.end()
    runs.append((text[last:], ""))
    return runs


def label_name(label: str) -> Name:
    """A user's name; in TeX a trailing index becomes a subscript (W1 -> W_{1}). A name
    written as a sum or a product (micrograd's lecture: 'x1*w1 + x2*w2') or signed binds
    as one: parenthesised where a plain name is not, ∂o/∂(x₁*w₁), not ∂o/∂x₁ times w₁."""
    base, index = name_parts(label)
    text = typeset(label)
    precedence = (ops.SIGNED if label.strip().startswith(("-", "−")) else
                  ops.SUM if any(c in "+-−" or c.isspace() for c in label.strip()) else
                  ops.PRODUCT if any(c in "*/·×@%^" for c in label) else ops.ATOM)
    if not base.isalpha():
        tex = _tex_escape(text)
        for letter, command in _GREEK_TEX.items():
            tex = tex.replace(letter, command + " ")
        return Name(text, r"\mathrm{" + tex + "}", precedence)
    tex = _GREEK_TEX.get(base) or (base if len(base) == 1 else r"\mathrm{" + base + "}")
    if index:
        tex += "_{" + _tex_escape(index) + "}"
    return Name(text, tex, precedence)


def _tex_escape(text: str) -> str:
    return re.sub(r"([_&%$#{}])", r"\\\1", text)


def number_name(x: float, precision: int | None = None) -> Name:
    """A number as written: ``f"{x:g}"``, or to ``precision`` significant digits."""
    text = f"{x:g}" if precision is None else f"{x:.{precision}g}"
    return Name(text.replace("-", "−"), text, ops.SIGNED if text.startswith("-") else ATOM)


def parenthesised(name: Name, needed: int = POSTFIX) -> Name:
    """``name`` in parentheses unless it binds at least as tightly as ``needed``."""
    if name.precedence >= needed:
        return name
    return Name(f"({name.text})", rf"\left({name.tex}\right)")


@lru_cache(maxsize=1024)
def text_template(text: str) -> Template:
    return Template(text)


def filled(template: str, tex_template: str, fields: Mapping[str, Name]) -> Name:
    """A registry template pair, filled with the texts and the TeX of ``fields``."""
    return Name(text_template(template).substitute({k: v.text for k, v in fields.items()}),
                text_template(tex_template).substitute({k: v.tex for k, v in fields.items()}))


def product_sign(tensor: bool) -> Name:
    return Name("⊙", r"\odot") if tensor else Name("·", r"\cdot")


def exponent_names(attrs: Mapping) -> tuple[Name, Name]:
    """The exponent n of a power op, and n − 1, as written (``n`` if unknown)."""
    n = attrs.get("exponent")
    if n is None:
        return Name("n", "n"), Name("n − 1", "n-1")
    return tuple(Name(f"{m:g}".replace("-", "−"), f"{m:g}") for m in (n, n - 1))


def index_name(attrs: Mapping) -> Name:
    """An indexed op's index as the script wrote it (``2``, ``target``), else "…"."""
    index = attrs.get("index")
    if index is None:
        return _ELLIPSIS
    tex = IDENTIFIER.sub(lambda match: r"\mathrm{" + match.group() + "}", _tex_escape(index))
    return Name(index, tex.replace("…", r"\ldots ").replace("−", "-"))


def op_expression(G: nx.MultiDiGraph, op: Any, args: Sequence[Name],
                  numbers: tuple[int, ...] | None = None) -> Name:
    """The op ``op`` applied to ``args`` (its operands in order), written as captions write
    it: as called, its own module's parameters left out. With ``numbers`` (the operands'
    numbers of dimensions), ``args`` are their numbers, written as the op's form for
    operands of those dimensions writes numbers (a linear layer's x · Wᵀ + b)."""
    tensor = G.nodes[next(iter(G.successors(op)))].get("shape", ()) != ()
    attrs = G.nodes[op]
    if numbers is not None and ops.get(attrs["op"]).form(len(args), numbers).expression.numbers:
        return _expression(attrs, list(args), tensor, numbers)
    return _expression(attrs, _as_called(G, op, list(args)), tensor)


def _expression(attrs: Mapping, args: Sequence[Name], tensor: bool,
                numbers: tuple[int, ...] | None = None) -> Name:
    """How the result of the op ``attrs`` applied to ``args`` is written (``numbers``: the
    operands' numbers of dimensions, where they are numbers and the op is written
    otherwise with them)."""
    writing = ops.get(attrs["op"]).form(len(args), numbers).expression
    wrapped = [parenthesised(arg, writing.wrap[i] if i < len(writing.wrap) else 0)
               for i, arg in enumerate(args)]
    terms = wrapped[:1] + [parenthesised(arg, ops.SUM) for arg in wrapped[1:]]  # (o + (−0.25) + c)
    n, _ = exponent_names(attrs)
    fields = {"dot": product_sign(tensor), "n": n, "n_sup": Name(superscript(n.text), n.tex),
              "index": index_name(attrs),
              "name": label_name(attrs.get("symbol") or attrs["op"]),
              "args": Name(", ".join(arg.text for arg in wrapped),
                           ", ".join(arg.tex for arg in wrapped)),
              "terms": Name(" + ".join(arg.text for arg in terms),
                            " + ".join(arg.tex for arg in terms))}
    fields.update(zip("abc", wrapped, strict=False))
    name = filled(writing.numbers if numbers is not None and writing.numbers else writing.text,
                  writing.tex, fields)
    return Name(name.text, name.tex, writing.precedence)


def heading_room(attrs: Mapping) -> float:
    """How wide (points) a value's written name may set as its box's heading: the width of
    the box's numbers (its data and gradient side by side, as drawn), or _LEAST_ROOM."""
    width = 0.0
    for x in (attrs.get("data"), attrs.get("grad")):
        if x is not None:
            rows = format_array(x, 4, MAX_ITEMS)
            width += max(sum(text_width(cell, VALUE_PT, "numbers") + _CELL_GAP for cell in row)
                         for row in rows) + _CELL_GAP
    return max(width, _LEAST_ROOM)


def _heading_fits(attrs: Mapping, text: str, room: float = 1.0) -> bool:
    return text_width(typeset(text), EXPRESSION_PT, "serif") <= room * heading_room(attrs)


def value_names(G: nx.MultiDiGraph, longest: int | None = None,
                precision: int | None = None) -> dict[Any, Name]:
    """How every value node is written in captions.

    A value's label if it has one; an unnamed scalar constant by its number;
    any other unnamed value by the expression that computed it (``o − 0``,
    ``Σ(o − 0)²``), shortened with "…" where it is wider than its box has room for
    (heading_room; or, given ``longest``, past that many characters); a small unnamed
    input tensor by its numbers (``[0; 0]``), any other unnamed leaf as _leaf_name says.
    """
    names: dict[Any, Name] = {}
    for node in nx.topological_sort(G):
        attrs = G.nodes[node]
        if attrs.get("kind") != "value":
            continue
        if attrs.get("label"):
            names[node] = label_name(attrs["label"])
            continue
        producers = list(G.predecessors(node))
        if not producers:
            data = attrs.get("data")
            if isinstance(data, (int, float)):
                names[node] = number_name(data, precision)
            elif not _described(G, node):
                # (a small unnamed input, torch.zeros(2) as a loop's first h: its numbers)
                text = number_text(data, 4 if precision is None else precision)
                names[node] = Name(text, _tex_escape(text), ATOM)
            else:
                names[node] = _leaf_name(G, node)
            continue
        op = producers[0]
        op_attrs = G.nodes[op]
        tensor = attrs.get("shape", ()) != ()
        args = [names[u] for u, _, _ in operand_edges(G, op)]
        args = _as_called(G, op, args)
        full = _expression(op_attrs, args, tensor)

        def fits(text: str, room: float = 1.0, attrs: Mapping = attrs) -> bool:
            # (within ``room`` times the room it has)
            return len(text) <= room * longest if longest is not None \
                else _heading_fits(attrs, text, room)

        if not fits(full.text):
            full = _shortened(G, op, args, tensor, fits)
        names[node] = full
    return names


def _leaf_name(G: nx.MultiDiGraph, node: Any) -> Name:
    """An unnamed leaf that is not written as its numbers: by the named value the script
    made of it, if that is all it went into (``W = torch.randn(3, 4, requires_grad=True)
    * 0.5``: "leaf of W", the tensor autograd gives a gradient, which W itself does not
    get), else by its role and shape ("param 3×4")."""
    made = {value for op in G.successors(node) for value in G.successors(op)}
    label = G.nodes[next(iter(made))].get("label") if len(made) == 1 else None
    if label:
        became = label_name(label)
        return Name(f"leaf of {became.text}", rf"\text{{leaf of }}{became.tex}", ops.PRODUCT)
    attrs = G.nodes[node]
    words = " ".join([attrs.get("role") or "leaf", "×".join(map(str, attrs.get("shape", ())))])
    return Name(words.strip(), r"\text{" + _tex_escape(words.strip()) + "}", ops.PRODUCT)


def _described(G: nx.MultiDiGraph, node: Any) -> bool:
    """Whether an unnamed leaf is written by words (_leaf_name), not by its numbers."""
    attrs = G.nodes[node]
    data = attrs.get("data")
    return not isinstance(data, (int, float)) and not (
        attrs.get("role") != "param" and 0 < np.size(data) <= SMALL_ENTRIES)


@dataclass(frozen=True)
class Heading:
    """What heads a value's box, in every view that draws boxes: the name the script
    gave it (``named``: set as a name, W1 as W₁) or, for an unnamed computed value,
    the expression that computed it (``o − y``, set in the headings' grey)."""

    text: str
    named: bool


def headings(G: nx.MultiDiGraph, precision: int | None = None,
             expressions: bool = True) -> dict[Any, Heading]:
    """The heading of every value box that has one: its label, else (with
    ``expressions``) the expression that computed it, or for an unnamed leaf not drawn
    as its numbers, what it is (_leaf_name: "leaf of W1", "param 3×4")."""
    names = value_names(G, precision=precision) if expressions else {}
    found = {}
    for node, attrs in G.nodes(data=True):
        if attrs.get("kind") != "value":
            continue
        if attrs.get("label"):
            found[node] = Heading(attrs["label"], True)
        elif node in names and (G._pred[node] or _described(G, node)):
            found[node] = Heading(names[node].text, False)
    return found


def _as_called(G: nx.MultiDiGraph, op: Any, args: list[Name]) -> list[Name]:
    """The operands an op's call is written with: without the parameters the op's own
    module holds, or a module inside it (``model.0.weight`` in model.0's linear:
    ``linear(x)``, as PyTorch writes the call ``model.0(x)``)."""
    attrs = G.nodes[op]
    owners = {attrs.get("symbol"), *(attrs.get("group") or [])[-1:]}
    operands = [u for u, _, _ in operand_edges(G, op)]
    own = [G.nodes[u].get("role") == "param" and any((G.nodes[u].get("label") or "")
           .startswith(f"{owner}.") for owner in owners if owner) for u in operands]
    if any(own) and not all(own) and ops.get(attrs["op"]).form(len(args)).expression.text \
            .endswith("($args)"):
        return [arg for arg, mine in zip(args, own, strict=True) if not mine]
    return args


def _shortened(G: nx.MultiDiGraph, op: Any, args: list[Name], tensor: bool,
               fits: Callable[..., bool]) -> Name:
    """An expression too wide to head its box: as few longest operands as it takes "…"."""
    attrs, writing = G.nodes[op], ops.get(G.nodes[op]["op"]).form(len(args)).expression
    # Else its longest operands written "…", one at a time (a value used twice, both
    # times), as few as it takes; but a name of "…" alone says nothing: up to twice
    # its room, the expression is kept whole rather than that (not past it: an
    # expression of expressions kept whole, a residual block's f(x) + x, doubles at
    # every block). A call says what it calls: model.layer1(…), max_pool2d(…).
    full, shortened, args = _expression(attrs, args, tensor), None, list(args)
    while shortened is None or not fits(shortened.text):
        long = [arg.text for arg in args if len(arg.text) > 2 and arg is not _ELLIPSIS]
        if not long:
            break
        cut = max(long, key=len)
        args = [_ELLIPSIS if arg.text == cut else arg for arg in args]
        shortened = _expression(attrs, args, tensor)
    if shortened is None or (all(arg is _ELLIPSIS or len(arg.text) <= 2 for arg in args)
                             and fits(full.text, 2.0) and not writing.call):
        return full
    return shortened


def differentiated(G: nx.MultiDiGraph, names: dict[Any, Name]) -> Name:
    """The quantity the backward pass differentiates: the seeded root, named. An unnamed
    root (or several seeded roots, whose gradients add) is called L, or another letter
    if a value is named L; a part of a drawing is told the name."""
    seeds = list(G.graph.get("seeds", {}))
    if len(seeds) == 1 and G.nodes[seeds[0]].get("label") and not G.graph.get("entered"):
        return names[seeds[0]]
    if G.graph.get("differentiated"):  # (named by the drawing it was cut from)
        return label_name(G.graph["differentiated"])
    taken = {name.text for name in names.values()}
    letter = next((letter for letter in ("L", "J", "F", "E") if letter not in taken), "L")
    return Name(letter, letter)


def partial_name(top: Name, value: Name) -> Name:
    """∂top/∂value; in text anything but a plain name is parenthesised, so
    that ∂L/∂(a²) cannot be read as (∂L/∂a)²."""
    below = parenthesised(value, ATOM)
    return Name(f"∂{top.text}/∂{below.text}",
                rf"\frac{{\partial {top.tex}}}{{\partial {below.tex}}}", ops.PRODUCT)
