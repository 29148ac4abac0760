"""Chain-rule captions of the backward pass, one per step, read from the IR alone."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from .ir import backward_steps, operand_edges

__all__ = [
    "Caption",
    "Name",
    "differentiated",
    "name_parts",
    "partial_name",
    "step_captions",
    "value_names",
]


@dataclass(frozen=True)
class Caption:
    """What one step of the backward pass computes, as an equation and in words.

    ``text`` is Unicode ("∂L/∂h = W2ᵀ · ∂L/∂o"), ``tex`` the same equation for
    MathTex, and ``rule`` a one-line plain description of the local rule.
    """

    text: str
    tex: str
    rule: str


@dataclass(frozen=True)
class Name:
    """How a value is written: Unicode ``text``, LaTeX ``tex``, and how tightly
    it binds (``precedence``: SUM < PRODUCT < POSTFIX < ATOM), which decides
    where it needs parentheses."""

    text: str
    tex: str
    precedence: int = 4


SUM, PRODUCT, POSTFIX, ATOM = 1, 2, 3, 4


# Unnamed values are written as the expression that made them, as long as that
# stays short; past this many characters the operands become "…".
_MAX_EXPRESSION = 18
_ELLIPSIS = Name("…", r"\ldots")
_GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "eta", "theta", "lambda", "mu",
          "sigma", "tau", "phi", "psi", "omega"}
_SUPERSCRIPT = str.maketrans("0123456789-.", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻·")


# A name with a trailing index: W1, w1_11, x_in. The picture, the page and the
# video all set the index as a subscript, split by this one rule.
_INDEXED_NAME = re.compile(r"([A-Za-z]+)_?([0-9][0-9_]*|_[A-Za-z0-9_]+)?")


def name_parts(label: str) -> tuple[str, str]:
    """A name's base and subscript: ``W1`` -> ("W", "1"), ``w1_11`` -> ("w", "1,11")."""
    match = _INDEXED_NAME.fullmatch(label)
    if match and match.group(2):
        return match.group(1), match.group(2).strip("_").replace("_", ",")
    return label, ""


def _label_name(label: str) -> Name:
    """A user's name; in TeX a trailing index becomes a subscript (W1 -> W_{1})."""
    base, index = name_parts(label)
    if not base.isalpha():
        return Name(label, r"\mathrm{" + _tex_escape(label) + "}")
    tex = "\\" + base if base in _GREEK else (base if len(base) == 1 else
                                              r"\mathrm{" + base + "}")
    if index:
        tex += "_{" + _tex_escape(index) + "}"
    return Name(label, tex)


def _tex_escape(text: str) -> str:
    return re.sub(r"([_&%$#{}])", r"\\\1", text)


def _number(x: float) -> Name:
    text = f"{x:g}"
    return Name(text.replace("-", "−"), text, ATOM if x >= 0 else SUM)


def _wrap(name: Name, needed: int = POSTFIX) -> Name:
    """``name`` in parentheses unless it binds at least as tightly as ``needed``."""
    if name.precedence >= needed:
        return name
    return Name(f"({name.text})", rf"\left({name.tex}\right)")


def _expression(op: str, attrs: dict, args: Sequence[Name], tensor: bool) -> Name:
    """How the result of ``op`` applied to ``args`` is written."""
    a = args[0]
    w = _wrap(a, ATOM)
    if op in ("add", "sub") and len(args) == 2:
        b = _wrap(args[1], SUM if op == "add" else PRODUCT)
        sign = " + " if op == "add" else (" − ", " - ")
        text_sign, tex_sign = (sign, sign) if isinstance(sign, str) else sign
        return Name(a.text + text_sign + b.text, a.tex + tex_sign + b.tex, SUM)
    if op in ("mul", "div", "matmul") and len(args) == 2:
        left, right = _wrap(a, PRODUCT), _wrap(args[1], POSTFIX)
        text_sign, tex_sign = {"mul": ("⊙", r" \odot ") if tensor else ("·", r" \cdot "),
                               "div": (" / ", " / "), "matmul": (" ", " ")}[op]
        return Name(left.text + text_sign + right.text, left.tex + tex_sign + right.tex, PRODUCT)
    if op == "neg":
        b = _wrap(a, PRODUCT)
        return Name("−" + b.text, "-" + b.tex, SUM)
    if op == "pow" and len(args) == 1:
        n = attrs.get("exponent")
        up = f"{n:g}" if n is not None else "n"
        return Name(w.text + up.translate(_SUPERSCRIPT), w.tex + "^{" + up + "}", POSTFIX)
    if op == "pow":
        b = _wrap(args[1], ATOM)
        return Name(f"{w.text}^{b.text}", w.tex + "^{" + b.tex + "}", POSTFIX)
    if op == "square":
        return Name(w.text + "²", w.tex + "^{2}", POSTFIX)
    if op == "transpose":
        return Name(w.text + "ᵀ", w.tex + r"^\top", POSTFIX)
    if op == "sqnorm":
        return Name(f"‖{a.text}‖²", rf"\|{a.tex}\|^{{2}}", POSTFIX)
    if op == "sum":
        b = _wrap(a, POSTFIX)
        return Name("Σ" + b.text, r"\sum " + b.tex, PRODUCT)
    if op == "getitem":
        return Name(w.text + "[…]", w.tex + r"[\ldots]", POSTFIX)
    tex_function = {"relu": r"\mathrm{ReLU}", "tanh": r"\tanh", "exp": r"\exp",
                    "log": r"\log", "sigmoid": r"\sigma", "mean": r"\mathrm{mean}"}
    text_function = {"sigmoid": "σ", "relu": "ReLU"}.get(op, op)
    inner = ", ".join(arg.text for arg in args)
    inner_tex = ", ".join(arg.tex for arg in args)
    function_tex = tex_function.get(op, r"\mathrm{" + _tex_escape(op) + "}")
    return Name(f"{text_function}({inner})", function_tex + rf"\left({inner_tex}\right)")


def value_names(G: nx.MultiDiGraph) -> dict[Any, Name]:
    """How every value node is written in captions.

    A value's label if it has one; an unnamed scalar constant by its number;
    any other unnamed value by the expression that computed it (``o − 0``,
    ``Σ(o − 0)²``), shortened with "…" when it would get long; an unnamed leaf
    tensor by its IR id.
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
            names[node] = _number(data) if isinstance(data, (int, float)) \
                else Name(str(node), r"\mathrm{" + _tex_escape(str(node)) + "}")
            continue
        op = producers[0]
        op_attrs = G.nodes[op]
        tensor = attrs.get("shape", ()) != ()
        args = [names[u] for u, _, _ in operand_edges(G, op)]
        full = _expression(op_attrs["op"], op_attrs, args, tensor)
        if len(full.text) > _MAX_EXPRESSION:
            full = _expression(op_attrs["op"], op_attrs,
                               [arg if len(arg.text) <= 2 else _ELLIPSIS for arg in args],
                               tensor)
        names[node] = full
    return names


def differentiated(G: nx.MultiDiGraph, names: dict[Any, Name]) -> Name:
    """The quantity the backward pass differentiates: the seeded root, named.

    An unnamed root (or several seeded roots, whose gradients add) is called L.
    """
    seeds = list(G.graph.get("seeds", {}))
    if len(seeds) == 1 and G.nodes[seeds[0]].get("label"):
        return names[seeds[0]]
    return Name("L", "L")


def partial_name(top: Name, value: Name) -> Name:
    """∂top/∂value; in text anything but a plain name is parenthesised, so
    that ∂L/∂(a²) cannot be read as (∂L/∂a)²."""
    below = _wrap(value, ATOM)
    return Name(f"∂{top.text}/∂{below.text}",
                rf"\frac{{\partial {top.tex}}}{{\partial {value.tex}}}", PRODUCT)


def _seed_caption(G: nx.MultiDiGraph, names: dict[Any, Name], top: Name) -> Caption:
    seeds = G.graph.get("seeds", {})
    if not seeds:
        return Caption("forward pass only (no backward record)",
                       r"\text{forward pass only}", "the graph was not differentiated")
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
    return Caption(",  ".join(texts), r",\quad ".join(texs),
                   f"seed: the gradient of {top.text} with respect to itself is 1")


def _local(op: str, attrs: dict, arg: int, args: list[Name], result: Name, upstream: Name,
           tensor: bool, size_ratio: int, broadcast: bool) -> Name:
    """The right-hand side ∂top/∂operand for operand ``arg`` of ``op``: the
    upstream gradient times the op's local derivative."""
    dot_text, dot_tex = ("⊙", r"\odot") if tensor else ("·", r"\cdot")
    g = upstream
    a = _wrap(args[0])

    def times(factor: Name) -> Name:
        return Name(f"{factor.text} {dot_text} {g.text}", f"{factor.tex} {dot_tex} {g.tex}")

    if op == "add" or (op == "sub" and arg == 0):
        rhs = g
    elif op in ("sub", "neg"):
        rhs = Name("−" + g.text, "-" + g.tex)
    elif op == "mul":
        rhs = times(_wrap(args[1 - arg]))
    elif op == "div" and arg == 0:
        b = _wrap(args[1])
        rhs = Name(f"{g.text} / {b.text}", rf"{g.tex} / {b.tex}")
    elif op == "div":
        b = _wrap(args[1])
        rhs = Name(f"−{g.text} {dot_text} {a.text} / {b.text}²",
                   rf"-{g.tex} {dot_tex} {a.tex} / {b.tex}^{{2}}")
    elif op == "matmul" and arg == 0:
        b = _wrap(args[1])
        rhs = Name(f"{g.text} · {b.text}ᵀ", rf"{g.tex} \, {b.tex}^\top")
    elif op == "matmul":
        rhs = Name(f"{a.text}ᵀ · {g.text}", rf"{a.tex}^\top {g.tex}")
    elif op == "relu":
        # The book's order: the upstream gradient, gated by φ'(z) = 1[z > 0].
        base = _wrap(args[0], ATOM).text
        rhs = Name(f"{g.text} {dot_text} 1[{base}>0]",
                   rf"{g.tex} {dot_tex} \mathbf{{1}}[{args[0].tex} > 0]")
    elif op == "pow" and len(args) == 1:
        n = attrs.get("exponent")
        if n is None:
            rhs = times(Name(f"n {a.text}ⁿ⁻¹", rf"n \, {a.tex}^{{n-1}}"))
        elif n - 1 == 1:
            rhs = times(Name(f"{n:g} {a.text}", rf"{n:g} \, {a.tex}"))
        else:
            up = f"{n - 1:g}"
            rhs = times(Name(f"{n:g} {a.text}{up.translate(_SUPERSCRIPT)}",
                             rf"{n:g} \, {a.tex}^{{{up}}}"))
    elif op == "pow" and arg == 0:
        b = _wrap(args[1])
        rhs = times(Name(f"{b.text} {a.text}^({b.text} − 1)",
                         rf"{b.tex} \, {a.tex}^{{{b.tex} - 1}}"))
    elif op == "pow":
        r = _wrap(result)
        rhs = times(Name(f"ln {a.text} {r.text}", rf"\ln {a.tex} \, {r.tex}"))
    elif op in ("square", "sqnorm"):
        rhs = times(Name(f"2 {a.text}", rf"2 \, {a.tex}"))
    elif op == "tanh":
        r = _wrap(result)
        rhs = times(Name(f"(1 − {r.text}²)", rf"\left(1 - {r.tex}^{{2}}\right)"))
    elif op == "exp":
        rhs = times(_wrap(result))
    elif op == "log":
        rhs = Name(f"{g.text} / {a.text}", rf"{g.tex} / {a.tex}")
    elif op == "sigmoid":
        r = _wrap(result)
        rhs = times(Name(f"{r.text}(1 − {r.text})", rf"{r.tex}\left(1 - {r.tex}\right)"))
    elif op == "sum":
        rhs = Name(f"{g.text} · 1", rf"{g.tex} \cdot \mathbf{{1}}")
    elif op == "mean":
        rhs = Name(f"{g.text} · 1 / {size_ratio}", rf"{g.tex} \cdot \mathbf{{1}} / {size_ratio}")
    elif op == "transpose":
        rhs = Name(f"({g.text})ᵀ", rf"\left({g.tex}\right)^\top")
    elif op == "getitem":
        rhs = Name(f"{g.text} at […], 0 elsewhere", rf"{g.tex} \text{{ at }} [\ldots]")
    else:
        r = _wrap(result)
        rhs = Name(f"∂{r.text}/∂{a.text} · {g.text}",
                   rf"\frac{{\partial {r.tex}}}{{\partial {a.tex}}} {g.tex}")
    if broadcast:
        # The operand was broadcast in the forward pass, so its gradient is the
        # upstream one summed over the broadcast axes.
        rhs = Name(f"Σ({rhs.text})", rf"\sum \left({rhs.tex}\right)")
    return rhs


_RULES = {
    "add": "add passes the gradient through unchanged",
    "sub": "subtract passes the gradient to the first input and its negative to the second",
    "neg": "negation flips the sign of the gradient",
    "mul": "multiply scales the gradient by the other input",
    "div": "divide scales the gradient by 1/b, and by −a/b² for the divisor",
    "matmul": "matmul multiplies the gradient by the transpose of the other factor",
    "relu": "ReLU gates the gradient: it passes where the input is positive and stops elsewhere",
    "pow": "power multiplies the gradient by n aⁿ⁻¹",
    "square": "square multiplies the gradient by 2a",
    "sqnorm": "the squared norm multiplies the gradient by 2a",
    "tanh": "tanh multiplies the gradient by 1 − tanh²",
    "exp": "exp multiplies the gradient by its own result",
    "log": "log divides the gradient by its input",
    "sigmoid": "sigmoid multiplies the gradient by σ(1 − σ)",
    "sum": "sum copies the gradient to every entry",
    "mean": "mean copies the gradient to every entry, divided by their count",
    "transpose": "transpose transposes the gradient",
    "getitem": "indexing sends the gradient back to the picked entries",
}


def step_captions(G: nx.MultiDiGraph) -> list[Caption]:
    """One Caption per step: step 0 is the seed, step k the k-th op of backward_order.

    Each caption gives, for every operand the op sends a gradient to, the
    chain rule as the book writes it (``∂L/∂h = W2ᵀ · ∂L/∂o``); a value that
    already had a gradient (a fork) gets ``+=``. Scalar constants are left out
    of the equation: nobody differentiates with respect to the 2 in ``L / 2``.
    """
    names = value_names(G)
    top = differentiated(G, names)
    captions = [_seed_caption(G, names, top)]
    had_gradient = set(G.graph.get("seeds", {}))
    for step in backward_steps(G):
        op_attrs = G.nodes[step.op]
        op = op_attrs["op"]
        result_attrs = G.nodes[step.result]
        upstream = partial_name(top, names[step.result])
        args = [names[u] for u, _, _ in step.edges]
        wanted = [edge for edge in step.edges
                  if G.edges[edge].get("grad") is not None
                  and G.nodes[edge[0]].get("role") != "const"]
        texts, texs = [], []
        for u, _, key in wanted:
            arg = G.edges[u, step.op, key]["arg"]
            shape = tuple(G.nodes[u].get("shape", ()))
            result_shape = tuple(result_attrs.get("shape", ()))
            size_ratio = max(1, int(np.prod(shape)) // max(1, int(np.prod(result_shape))))
            broadcast = op in ("add", "sub", "mul", "div") and shape != result_shape
            rhs = _local(op, op_attrs, arg, args, names[step.result], upstream,
                         tensor=result_shape != () or shape != (), size_ratio=size_ratio,
                         broadcast=broadcast)
            sign = "+=" if u in had_gradient else "="
            had_gradient.add(u)
            left = partial_name(top, names[u])
            texts.append(f"{left.text} {sign} {rhs.text}")
            tex_sign = r"\mathrel{+}=" if sign == "+=" else "="
            texs.append(f"{left.tex} {tex_sign} {rhs.tex}")
        # Constants left out of the equation still hold a gradient from now on.
        had_gradient.update(u for u, v, key in step.edges
                            if G.edges[u, v, key].get("grad") is not None)
        rule = _RULES.get(op, f"{op} multiplies the gradient by its local derivative")
        if op == "relu" and np.any(op_attrs.get("dead", False)):
            rule += "; dead units (input ≤ 0) pass nothing"
        if any(" += " in text for text in texts):
            rule += "; a value used twice adds up its gradients (+=)"
        if not texts:
            texts, texs = [f"{op}: no gradient to pass on"], [r"\text{no gradient}"]
        captions.append(Caption(",  ".join(texts), r",\quad ".join(texs), rule))
    return captions
