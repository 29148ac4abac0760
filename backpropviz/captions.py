"""Chain-rule captions of the backward pass, one per step, read from the IR alone."""

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
from . import worked as arithmetic  # (worked out: a caption's arithmetic)
from .closing import came_first, closing_line, closing_rule, closing_text
from .formatting import MAX_ITEMS, format_array, held_lines, listed, number_text, superscript
from .ir import operand_edges
from .metrics import text_width
from .ops import ATOM, POSTFIX
from .steps import backward_steps, loop_sums_known
from .style import EXPRESSION_PT, VALUE_PT
from .worked import RESULT_ENTRIES, as_written, digits_for, exactly, plus, rule_shares, same

__all__ = [
    "ENGINE_NOTES",
    "IDENTIFIER",
    "Caption",
    "Heading",
    "Name",
    "differentiated",
    "heading_room",
    "headings",
    "name_parts",
    "name_runs",
    "partial_name",
    "step_captions",
    "step_form",
    "subscripted",
    "typeset",
    "value_names",
]


ENGINE_NOTES = (" (overwrote ", " (but the engine ")  # a worked line's note: words


@dataclass(frozen=True)
class Caption:
    """What one step of the backward pass computes, as an equation and in words.

    ``text`` is Unicode ("∂L/∂h = W2ᵀ · ∂L/∂o"), ``tex`` the same equation for
    MathTex, and ``rule`` a one-line plain description of the local rule.
    ``worked`` is the step with its numbers, one line per equation, in
    Unicode: the rule, the engine's numbers put in, the contribution it
    recorded ("∂e/∂d = c · ∂e/∂e = (−3) · 1 = −3"), and at a fork the running
    sum before and after ("∂L/∂x = 2 + (−3) = −1"). ``edges`` pairs each operand
    edge the worked lines speak of with its own lines among them (the practice
    page asks for them one by one).
    """

    text: str
    tex: str
    rule: str
    worked: tuple[str, ...]
    edges: tuple[tuple[tuple, tuple[str, ...]], ...] = ()


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


def _label_name(label: str) -> Name:
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


def _number(x: float, precision: int | None = None) -> Name:
    """A number as written: ``f"{x:g}"``, or to ``precision`` significant digits."""
    text = f"{x:g}" if precision is None else f"{x:.{precision}g}"
    return Name(text.replace("-", "−"), text, ops.SIGNED if text.startswith("-") else ATOM)


def _wrap(name: Name, needed: int = POSTFIX) -> Name:
    """``name`` in parentheses unless it binds at least as tightly as ``needed``."""
    if name.precedence >= needed:
        return name
    return Name(f"({name.text})", rf"\left({name.tex}\right)")


@lru_cache(maxsize=1024)
def _template(text: str) -> Template:
    return Template(text)


def _filled(template: str, tex_template: str, fields: Mapping[str, Name]) -> Name:
    """A registry template pair, filled with the texts and the TeX of ``fields``."""
    return Name(_template(template).substitute({k: v.text for k, v in fields.items()}),
                _template(tex_template).substitute({k: v.tex for k, v in fields.items()}))


def _product_sign(tensor: bool) -> Name:
    return Name("⊙", r"\odot") if tensor else Name("·", r"\cdot")


def _exponent(attrs: Mapping) -> tuple[Name, Name]:
    """The exponent n of a power op, and n − 1, as written (``n`` if unknown)."""
    n = attrs.get("exponent")
    if n is None:
        return Name("n", "n"), Name("n − 1", "n-1")
    return tuple(Name(f"{m:g}".replace("-", "−"), f"{m:g}") for m in (n, n - 1))


def _index(attrs: Mapping) -> Name:
    """An indexed op's index as the script wrote it (``2``, ``target``), else "…"."""
    index = attrs.get("index")
    if index is None:
        return _ELLIPSIS
    tex = IDENTIFIER.sub(lambda match: r"\mathrm{" + match.group() + "}", _tex_escape(index))
    return Name(index, tex.replace("…", r"\ldots ").replace("−", "-"))


def _expression(attrs: Mapping, args: Sequence[Name], tensor: bool) -> Name:
    """How the result of the op ``attrs`` applied to ``args`` is written."""
    writing = ops.get(attrs["op"]).form(len(args)).expression
    wrapped = [_wrap(arg, writing.wrap[i] if i < len(writing.wrap) else 0)
               for i, arg in enumerate(args)]
    terms = wrapped[:1] + [_wrap(arg, ops.SUM) for arg in wrapped[1:]]  # (o + (−0.25) + c)
    n, _ = _exponent(attrs)
    fields = {"dot": _product_sign(tensor), "n": n, "n_sup": Name(superscript(n.text), n.tex),
              "index": _index(attrs),
              "name": _label_name(attrs.get("symbol") or attrs["op"]),
              "args": Name(", ".join(arg.text for arg in wrapped),
                           ", ".join(arg.tex for arg in wrapped)),
              "terms": Name(" + ".join(arg.text for arg in terms),
                            " + ".join(arg.tex for arg in terms))}
    fields.update(zip("ab", wrapped, strict=False))
    name = _filled(writing.text, writing.tex, fields)
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
            names[node] = _label_name(attrs["label"])
            continue
        producers = list(G.predecessors(node))
        if not producers:
            data = attrs.get("data")
            if isinstance(data, (int, float)):
                names[node] = _number(data, precision)
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
        became = _label_name(label)
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
        return _label_name(G.graph["differentiated"])
    taken = {name.text for name in names.values()}
    letter = next((letter for letter in ("L", "J", "F", "E") if letter not in taken), "L")
    return Name(letter, letter)


def partial_name(top: Name, value: Name) -> Name:
    """∂top/∂value; in text anything but a plain name is parenthesised, so
    that ∂L/∂(a²) cannot be read as (∂L/∂a)²."""
    below = _wrap(value, ATOM)
    return Name(f"∂{top.text}/∂{below.text}",
                rf"\frac{{\partial {top.tex}}}{{\partial {below.tex}}}", ops.PRODUCT)


def _plain(text: str, tex: str, rule: str) -> Caption:
    """A caption whose equation has no numbers to put in: its worked line is itself."""
    return Caption(text, tex, rule, (text,))


def _seed_caption(G: nx.MultiDiGraph, names: dict[Any, Name], top: Name) -> Caption:
    seeds = G.graph.get("seeds", {})
    if not seeds and any(grad is not None for _, grad in G.nodes(data="grad")):
        return _plain("gradients as the script left them (no record of backward's steps)",
                       r"\text{gradients as left}", "the steps of the backward pass were "
                       "not recorded")
    if not seeds:
        return _plain("forward pass only (no backward record)",
                       r"\text{forward pass only}", "the graph was not differentiated")
    if G.graph.get("entered"):
        # Backward started at a value beyond the drawing: the gradient enters here.
        texts = [f"{partial_name(top, names[root]).text} = "
                 f"{_number(float(seed)).text if np.ndim(seed) == 0 else 'the gradient'}"
                 for root, seed in seeds.items()]
        texs = [rf"{partial_name(top, names[root]).tex} = \text{{given}}" for root in seeds]
        rule = "the backward pass started at a later value; its gradient enters the drawing here"
        known = loop_sums_known(G)
        if known:  # (a rolled loop drawn at an earlier repetition)
            later = list(range(G.graph["loop_count"], G.graph["loop_step"] + 1, -1))
            came = G.graph.get("loop_came_before", {})
            rule += "; " + came_first({names[value].text: came.get(value, later)
                                       for value in known})
        return _plain(",  ".join(texts) + " (from beyond the drawing)", r",\quad ".join(texs),
                      rule)
    texts, texs = [], []
    for root, seed in seeds.items():
        ones = bool(np.all(np.asarray(seed) == 1.0))
        seed_name = _number(1.0) if ones else (
            _number(float(seed)) if np.ndim(seed) == 0 else Name("the given seed", r"\text{seed}"))
        # One seeded root is the differentiated quantity itself (∂L/∂L = 1);
        # several roots are differentiated as their sum L (∂L/∂J = ∂L/∂s = 1).
        partial = partial_name(top, top if len(seeds) == 1 else names[root])
        texts.append(f"{partial.text} = {seed_name.text}")
        texs.append(f"{partial.tex} = {seed_name.tex}")
        if not ones and len(seeds) == 1:
            # ∂L/∂L is 1; another number is what backward() started from (a
            # student's engine that forgot the seed, a gradient given to backward).
            texts[-1] += f" (the seed backward() started from; {partial.text} itself is 1)"
    if len(seeds) == 1:
        rule = f"backward starts at {top.text}: its gradient with respect to itself is 1"
    else:  # backward([p, q]): what it differentiates is their sum, weighted by the seeds
        terms = [names[root].text if np.all(np.asarray(seed) == 1.0)
                 else f"{_number(float(seed)).text}·{_wrap(names[root], ops.PRODUCT).text}"
                 if np.ndim(seed) == 0 else f"⟨seed, {names[root].text}⟩"
                 for root, seed in seeds.items()]
        tops = [names[root].text for root in seeds]
        passes = G.graph.get("backward_passes")
        rule = (f"seeds: {passes} backward passes, from {listed(tops, 'and from ')}, add up "
                f"in .grad, so the gradients are those of {top.text} = {' + '.join(terms)}"
                if passes else
                f"seeds: backward starts from {listed(tops)} at once, so it differentiates "
                f"{top.text} = {' + '.join(terms)}")
    return _plain(",  ".join(texts), r",\quad ".join(texs), rule)


def _function(attrs: Mapping, result: Name, top: Name) -> Name:
    """What an op known only by its name (a group, a foreign op) differentiates in
    its local derivative ∂r/∂x: its result, unless that is the quantity the whole
    pass differentiates, where ∂L/∂h · ∂L/∂L would define ∂L/∂h by itself; there
    it is the op's own name, the function it stands for (∂loss/∂h · ∂L/∂L)."""
    symbol = attrs.get("symbol") or ""
    if result.text != top.text or not symbol or symbol == result.text:
        return result
    return _label_name(symbol)


def step_form(G: nx.MultiDiGraph, step: Any) -> ops.Form:
    """The registry's form of backward ``step``'s op for its operands as recorded: their
    number, and their numbers of dimensions where the op writes its rule apart for them
    (a vector times a matrix)."""
    ndims = tuple(len(G.nodes[u].get("shape", ())) for u, _, _ in step.edges)
    return ops.get(G.nodes[step.op]["op"]).form(len(step.edges), ndims)


def _local(attrs: Mapping, form: ops.Form, arg: int, args: list[Name], result: Name,
           upstream: Name, tensor: bool, size_ratio: int, broadcast: bool, top: Name) -> Name:
    """The right-hand side ∂top/∂operand for operand ``arg`` of the op ``attrs``:
    the upstream gradient times the op's local derivative (its ``form``'s template)."""
    text, tex = form.derivatives[arg]
    if "∂$r" in text:
        result = _function(attrs, result, top)
    a = _wrap(args[0])
    n, n_less_one = _exponent(attrs)
    base = _wrap(args[0], ATOM)  # (col²)⁻⁰·⁵, not col²⁻⁰·⁵
    if n_less_one.text == "1":
        a_pow = a
    elif attrs.get("exponent") is None:
        a_pow = Name(base.text + "ⁿ⁻¹", base.tex + "^{n-1}")
    else:
        a_pow = Name(base.text + superscript(n_less_one.text),
                     base.tex + "^{" + n_less_one.tex + "}")
    fields = {"a": a, "a_atom": base, "g": upstream, "g_atom": _wrap(upstream, ATOM),
              "r": _wrap(result), "x": _wrap(args[arg]),
              "dot": _product_sign(tensor), "n": n, "a_pow": a_pow,
              "k": Name(str(size_ratio), str(size_ratio)), "index": _index(attrs)}
    if len(args) > 1:
        fields["b"] = _wrap(args[1])
        fields["b_atom"] = _wrap(args[1], ATOM)  # (Bᵀ)ᵀ, not Bᵀᵀ
    rhs = _filled(text, tex, fields)
    if broadcast:
        # The operand was broadcast in the forward pass, so its gradient is the
        # upstream one summed over the broadcast axes.
        rhs = Name(f"Σ({rhs.text})", rf"\sum \left({rhs.tex}\right)")
    return rhs


def _factor(x: Any, precision: int) -> Name:
    """A number as a factor: a negative scalar in parentheses, ``(−3)``."""
    text = number_text(x, precision)
    return Name(f"({text})" if text.startswith("−") else text, text)


def _size(x: Any) -> int:
    """How many entries a worked line would write; an array laid out in three axes or more
    (formatting.drawn_shape) is read on the picture, as if too large to write."""
    flat = all(n == 1 for n in np.shape(x)[2:])
    return 0 if x is None else int(np.size(x)) if flat else 1 << 30


def _worked_product(G: nx.MultiDiGraph, step: Any, edge: tuple, upstream: Any,
                    names: Mapping[Any, Name], size_ratio: int, broadcast: bool,
                    precision: int, top: Name) -> tuple[str, bool] | None:
    """The registry's numbers template of ``edge``'s derivative, filled with the numbers the
    IR recorded, and whether each is written exactly; None where one is too large to write."""
    u, op, _ = edge
    attrs = G.nodes[op]
    form = step_form(G, step)
    arg = G.edges[edge]["arg"]
    template = _template(form.numbers[arg])
    operands = [G.nodes[w]["data"] for w, _, _ in step.edges]
    recorded = {"a": operands[0], "b": operands[1] if len(operands) > 1 else None,
                "r": G.nodes[step.result]["data"], "g": upstream,
                "m": attrs.get("mask"), "p": attrs.get("p"), "gate": _passes(G, op)}
    used = set(template.get_identifiers())
    if any(recorded[k] is None or _size(recorded[k]) > SMALL_ENTRIES
           for k in recorded if k in used or (k == "a" and "a_pow" in used)):
        return None
    filled = {k: v for k, v in recorded.items() if k in used or (k == "a" and "a_pow" in used)}
    rows = ops.get(attrs["op"]).broadcasts and any(np.ndim(v) > 1 for v in filled.values())
    fields = {k: _factor(np.reshape(v, (1, -1)) if rows and np.ndim(v) == 1 else v,  # (as a
                         precision).text for k, v in filled.items()}  # row, as numpy aligns it)
    if "ones" in used:  # (a sum's local derivative: 1 at every entry of its operand)
        ones = np.ones(np.shape(operands[0]))
        fields["ones"] = number_text(ones, precision) if ones.size <= SMALL_ENTRIES else "1"
    tensor = any(np.ndim(v) > 0 for v in (*operands, recorded["r"]))
    fields.update(dot="⊙" if tensor else "·", k=str(size_ratio), index=_index(attrs).text,
                  R=_wrap(_function(attrs, names[step.result], top), ATOM).text,
                  X=_wrap(names[u], ATOM).text)
    exponent = attrs.get("exponent")
    if "n" in used or "a_pow" in used:
        if exponent is None:
            return None
        fields["n"] = _number(exponent).text
        less = exponent - 1
        a = _factor(operands[0], precision).text  # (−3), [1; 2] or 3: each takes a power
        fields["a_pow"] = a if less == 1 else a + superscript(f"{less:g}")
    text = template.substitute(fields)
    exact = all(arithmetic.written_exactly(v, precision) for v in filled.values())
    return (f"Σ({text})" if broadcast else text), exact


def _passes(G: nx.MultiDiGraph, op: Any) -> Any:
    """A gate's local derivative as numbers: 1 where the op passes the gradient, 0
    where it blocks it (a ReLU's 1[z > 0] at the recorded z), from the entries the
    IR records as blocked, else from the op's gate on its operand's recorded data."""
    attrs = G.nodes[op]
    gate = ops.get(attrs["op"]).gate
    if attrs.get("dead") is not None:
        blocked = np.asarray(attrs["dead"], dtype=bool)
    elif gate is not None:
        (operand, _, _), *_ = operand_edges(G, op)
        blocked = np.asarray(gate(np.asarray(G.nodes[operand]["data"])), dtype=bool)
    else:
        return None
    passes = np.where(blocked, 0.0, 1.0)
    return float(passes) if passes.ndim == 0 else passes


def _worked_line(left: Name, sign: str, rhs: Name, product: tuple | None,
                 contribution: Any, precision: int) -> str:
    """``∂e/∂d = c · ∂e/∂e = (−3) · 1 = −3``: the numbers, then what was recorded; ≈ before
    it where the numbers as written give it only rounded ((−1.2) · 0.6127 ≈ −0.7353): the
    rule's share from them (``product[2]``, None: no rule) is not it, or one is rounded."""
    line = f"{left.text} {sign} {rhs.text}"
    result = number_text(contribution, precision) if _size(contribution) <= RESULT_ENTRIES \
        else None
    equals = " = "
    if product is not None and product[0] not in (result, f"({result})", rhs.text):
        line += f" = {product[0]}"
        _, lossless, share = product
        written = None if result is None else as_written(contribution, precision)
        exact = result is None or (exactly(share, written) if share is not None else
                                   lossless and exactly(written, contribution))
        equals = " = " if exact else " ≈ "
    if result is not None:
        line += equals + result
    return line


def _edge_lines(left: Name, sign: str, rhs: Name, product: tuple | None, rule_share: Any,
                before: Any, contribution: Any, after: Any, precision: int) -> list[str]:
    """The worked lines of one edge, true as written whatever the engine did.

    As the rule says: the contribution, then at a fork the running sum before and
    after. Otherwise what the engine's rule did instead: it overwrote the gradient
    (``=`` where ``+=`` belongs), or it sent a number this rule does not give.
    """
    def number(x: Any) -> str:
        return number_text(x, precision)

    fork = sign == "+="
    known = before is not None and after is not None and _size(before) <= RESULT_ENTRIES \
        and _size(after) <= RESULT_ENTRIES
    added_up = after is None or (before is None and fork) or same(
        after, plus(0.0 if before is None else before, contribution))
    as_the_rule = rule_share is None or same(rule_share, contribution)
    # The engine set the gradient to the rule's share (= where += belongs): what was
    # there before is lost. (Another engine's reader records the net change as the
    # contribution, ours and autograd's the share itself.)
    overwritten = not arithmetic.zero(before) and (same(after, rule_share) if not as_the_rule
                                         else not added_up and same(after, contribution))
    if overwritten:
        line = _worked_line(left, "=", rhs, product, after, precision)
        was = f"overwrote {number(before)}" if known else "overwrote the gradient it had"
        return [f"{line} ({was} — gradients at a fork must add: +=)"]
    if as_the_rule:
        lines = [_worked_line(left, sign, rhs, product, contribution, precision)]
    else:
        line = f"{left.text} {sign} {rhs.text}" + (f" = {product[0]}" if product else "")
        sent = f" {number(contribution)}" if _size(contribution) <= RESULT_ENTRIES else \
            " another number"
        lines = [f"{line} (but the engine {'added' if fork else 'gave'}{sent}: not what "
                 "this rule gives)"]
    if fork and known:
        if added_up:  # (its terms with the digits that add up to the sum as written)
            lines.append(arithmetic.sum_line(left.text, before, contribution, after, precision))
        else:
            lines.append(f"{left.text} is now {number(after)} in the engine, not the sum "
                         f"of {number(before)} and {number(contribution)}")
    return lines


def step_captions(G: nx.MultiDiGraph, precision: int = 4) -> list[Caption]:
    """One Caption per step: step 0 is the seed, step k the k-th op of backward_order.

    Each caption gives, for every operand the op sends a gradient to, the
    chain rule as the book writes it (``∂L/∂h = W2ᵀ · ∂L/∂o``); a value that
    already had a gradient (a fork) gets ``+=``. Scalar constants are left out
    of the equation: nobody differentiates with respect to the 2 in ``L / 2``.
    Its worked lines put in the numbers the IR recorded (operands' ``data``,
    the upstream gradient, each edge's ``grad`` and ``running``), written with
    ``precision`` significant digits; no number is computed here. Where the
    engine did not do what the rule says (a student's engine that overwrites a
    gradient, or sends another number), the worked line says what it did.
    """
    names = value_names(G)
    top = differentiated(G, names)
    captions = [_seed_caption(G, names, top)]
    # A value that earlier backward passes reached already has a gradient: the
    # last pass, which the steps show, adds to it (+=) from its first share on.
    # So has a rolled loop's weight from the repetitions after the one drawn (rolling.py).
    looped = G.graph.get("loop_before", {})
    had_gradient = set(G.graph.get("seeds", {})) | set(looped) | {
        v for v, passes in G.nodes(data="passes") if passes and passes > 1}
    reached: set = set()  # the values a drawn share of this pass has reached
    # Each value's running sum as the steps reach it: its number before a fork adds to it.
    running: dict[Any, Any] = {**G.graph.get("seeds", {}), **looped}
    for v, passes in G.nodes(data="passes"):
        if passes and passes > 1:
            running.setdefault(v, None)  # earlier passes' sum: not recorded
    for step in backward_steps(G):
        if step.op is None:  # a rolled loop's closing step: the repetitions not drawn
            captions.append(_closing_caption(G, names, top, step, running, precision))
            running.update((value, step.grads[value]) for value in step.updated)
            had_gradient.update(step.updated)
            continue
        forked_now = False
        op_attrs = G.nodes[step.op]
        spec = ops.get(op_attrs["op"])
        result_attrs = G.nodes[step.result]
        upstream = partial_name(top, names[step.result])
        upstream_number = step.grads.get(step.result)
        shares = rule_shares(G, step, upstream_number)
        written = rule_shares(G, step, upstream_number, precision) if any(  # (lines write them)
            _size(G.edges[edge].get("grad")) <= RESULT_ENTRIES for edge in step.edges) else None
        args = [names[u] for u, _, _ in step.edges]
        texts, texs, worked, per_edge = [], [], [], []
        for position, (u, v, key) in enumerate(step.edges):
            edge = G.edges[u, v, key]
            if edge.get("grad") is None:
                continue
            before = running.get(u)
            running[u] = edge.get("running")
            if G.nodes[u].get("role") == "const":
                continue
            arg = edge["arg"]
            shape = tuple(G.nodes[u].get("shape", ()))
            result_shape = tuple(result_attrs.get("shape", ()))
            size_ratio = max(1, int(np.prod(shape)) // max(1, int(np.prod(result_shape))))
            broadcast = spec.broadcasts and shape != result_shape
            rhs = _local(op_attrs, step_form(G, step), arg, args, names[step.result], upstream,
                         tensor=result_shape != () or shape != (), size_ratio=size_ratio,
                         broadcast=broadcast, top=top)
            sign = "+=" if u in had_gradient else "="
            if sign == "+=" and (u in reached or u in G.graph.get("seeds", {})):
                forked_now = True  # a share of this pass's own came before
            had_gradient.add(u)
            reached.add(u)
            left = partial_name(top, names[u])
            texts.append(f"{left.text} {sign} {rhs.text}")
            tex_sign = r"\mathrel{+}=" if sign == "+=" else "="
            texs.append(f"{left.tex} {tex_sign} {rhs.tex}")
            digits = digits_for(G, step, upstream_number, position, edge["grad"], precision,
                                written)
            product = None if upstream_number is None else _worked_product(
                G, step, (u, v, key), upstream_number, names, size_ratio, broadcast, digits,
                top)
            if product is not None:  # (with the rule's share from the numbers as written)
                share = written if digits == precision else rule_shares(
                    G, step, upstream_number, digits)
                product = (*product, None if share is None else share[position])
            lines = _edge_lines(left, sign, rhs, product,
                                None if shares is None else shares[position], before,
                                edge["grad"], edge.get("running"), precision)
            worked += lines
            per_edge.append(((u, v, key), tuple(lines)))
        # Constants left out of the equation still hold a gradient from now on.
        sent = {u for u, v, key in step.edges if G.edges[u, v, key].get("grad") is not None}
        had_gradient.update(sent)
        reached.update(sent)
        rule = spec.rule
        if spec.gate_note and np.any(op_attrs.get("dead", False)):
            rule += "; " + spec.gate_note
        if any(" += " in text for text in texts):
            # (+= for a share of this pass's at a fork, or only for earlier passes')
            rule += ("; a value used twice adds up its gradients (+=)" if forked_now else
                     "; each repetition of the loop adds its share to the weight's gradient "
                     "(+=)" if any(u in looped for u, _, _ in step.edges) else
                     "; backward passes add to the gradient already there (+=)")
        arrived = [u for u, _, _ in step.edges if u in G.graph.get("loop_arrived", ())]
        if arrived:  # (the sum so far came while this repetition was swept: say whence)
            rule += (f"; {listed([names[u].text for u in dict.fromkeys(arrived)])} held "
                     "the other repetitions' shares already, which this engine sent while "
                     "it swept this one (its order mixes the repetitions)")
        if step.result in G.graph.get("loop_after", {}):
            rule += (f"; by now {names[step.result].text} holds the shares of all "
                     f"{G.graph.get('loop_count')} repetitions of the loop")
        if op_attrs.get("parameters"):  # (a module's operator that holds its parameters)
            rule += "; the parameters drawn inside it get their gradients"
            held = held_lines(op_attrs, top.text, precision)
            texts, texs = texts or held, texs or [r"\text{its parameters' gradients}"]
            worked += held
        if not texts:
            texts, texs = [f"{spec.name}: no gradient to pass on"], [r"\text{no gradient}"]
            worked = list(texts)
        captions.append(Caption(",  ".join(texts), r",\quad ".join(texs), rule, tuple(worked),
                                tuple(per_edge)))
    return captions


def _closing_caption(G: nx.MultiDiGraph, names: dict[Any, Name], top: Name, step: Any,
                     running: dict, precision: int) -> Caption:
    """A rolled loop's closing step (closing.py): each shared value's sum so far, the
    shares of the repetitions not drawn, and the gradient the engine then held."""
    shares = G.graph.get("loop_shares", {})
    lefts = {value: partial_name(top, names[value]) for value in step.updated}
    texts = [closing_text(lefts[value].text, shares.get(value, ())) for value in step.updated]
    worked = [closing_line(lefts[value].text, running.get(value), shares.get(value, ()),
                           step.grads[value], precision) for value in step.updated]
    rule = closing_rule({value: shares.get(value, ()) for value in step.updated},
                        G.graph.get("loop_count"),
                        [names[value].text for value in step.updated],
                        bool(G.graph.get("loop_mixed")))
    texs = [rf"{lefts[value].tex} \mathrel{{+}}= \text{{the other repetitions' shares}}"
            for value in step.updated]
    return Caption(",  ".join(texts), r",\quad ".join(texs), rule, tuple(worked))
