"""Chain-rule captions of the backward pass, one per step, read from the IR alone."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from . import ops
from . import worked as arithmetic  # (worked out: a caption's arithmetic)
from .closing import came_first, closing_line, closing_rule, closing_text
from .formatting import held_lines, listed, number_text, superscript
from .ir import operand_edges
from .names import (
    SMALL_ENTRIES,
    Name,
    differentiated,
    exponent_names,
    filled,
    index_name,
    label_name,
    number_name,
    parenthesised,
    partial_name,
    product_sign,
    text_template,
    value_names,
)
from .ops import ATOM
from .steps import backward_steps, loop_sums_known
from .worked import (
    RESULT_ENTRIES,
    as_written,
    digits_for,
    exactly,
    out_of_order,
    plus,
    rule_shares,
    same,
    written_entries,
)

__all__ = ["ENGINE_NOTES", "Caption", "step_captions", "step_form"]


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
                 f"{number_name(float(seed)).text if np.ndim(seed) == 0 else 'the gradient'}"
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
        seed_name = number_name(1.0) if ones else (
            number_name(float(seed)) if np.ndim(seed) == 0
            else Name("the given seed", r"\text{seed}"))
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
                 else f"{number_name(float(seed)).text}·"
                      f"{parenthesised(names[root], ops.PRODUCT).text}"
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
    return label_name(symbol)


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
    a = parenthesised(args[0])
    n, n_less_one = exponent_names(attrs)
    base = parenthesised(args[0], ATOM)  # (col²)⁻⁰·⁵, not col²⁻⁰·⁵
    if n_less_one.text == "1":
        a_pow = a
    elif attrs.get("exponent") is None:
        a_pow = Name(base.text + "ⁿ⁻¹", base.tex + "^{n-1}")
    else:
        a_pow = Name(base.text + superscript(n_less_one.text),
                     base.tex + "^{" + n_less_one.tex + "}")
    fields = {"a": a, "a_atom": base, "g": upstream, "g_atom": parenthesised(upstream, ATOM),
              "r": parenthesised(result), "x": parenthesised(args[arg]),
              "dot": product_sign(tensor), "n": n, "a_pow": a_pow,
              "k": Name(str(size_ratio), str(size_ratio)), "index": index_name(attrs)}
    if len(args) > 1:
        fields["b"] = parenthesised(args[1])
        fields["b_atom"] = parenthesised(args[1], ATOM)  # (Bᵀ)ᵀ, not Bᵀᵀ
    rhs = filled(text, tex, fields)
    if broadcast:
        # The operand was broadcast in the forward pass, so its gradient is the
        # upstream one summed over the broadcast axes.
        rhs = Name(f"Σ({rhs.text})", rf"\sum \left({rhs.tex}\right)")
    return rhs


def _factor(x: Any, precision: int) -> Name:
    """A number as a factor: a negative scalar in parentheses, ``(−3)``."""
    text = number_text(x, precision)
    return Name(f"({text})" if text.startswith("−") else text, text)


def _worked_product(G: nx.MultiDiGraph, step: Any, edge: tuple, upstream: Any,
                    names: Mapping[Any, Name], size_ratio: int, broadcast: bool,
                    precision: int, top: Name) -> tuple[str, bool] | None:
    """The registry's numbers template of ``edge``'s derivative, filled with the numbers the
    IR recorded, and whether each is written exactly; None where one is too large to write."""
    u, op, _ = edge
    attrs = G.nodes[op]
    form = step_form(G, step)
    arg = G.edges[edge]["arg"]
    template = text_template(form.numbers[arg])
    operands = [G.nodes[w]["data"] for w, _, _ in step.edges]
    recorded = {"a": operands[0], "b": operands[1] if len(operands) > 1 else None,
                "r": G.nodes[step.result]["data"], "g": upstream,
                "m": attrs.get("mask"), "p": attrs.get("p"), "gate": _passes(G, op)}
    used = set(template.get_identifiers())
    if any(recorded[k] is None or written_entries(recorded[k]) > SMALL_ENTRIES
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
    fields.update(dot="⊙" if tensor else "·", k=str(size_ratio), index=index_name(attrs).text,
                  R=parenthesised(_function(attrs, names[step.result], top), ATOM).text,
                  X=parenthesised(names[u], ATOM).text)
    exponent = attrs.get("exponent")
    if "n" in used or "a_pow" in used:
        if exponent is None:
            return None
        fields["n"] = number_name(exponent).text
        less = exponent - 1
        a = _factor(operands[0], precision).text  # (−3), [1; 2] or 3: each takes a power
        fields["a_pow"] = a if less == 1 else a + superscript(f"{less:g}")
    text = template.substitute(fields)
    exact = form.exact and all(arithmetic.written_exactly(v, precision)
                               for v in filled.values())
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
    result = number_text(contribution, precision) \
        if written_entries(contribution) <= RESULT_ENTRIES else None
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
    known = before is not None and after is not None and written_entries(before) <= RESULT_ENTRIES \
        and written_entries(after) <= RESULT_ENTRIES
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
        sent = f" {number(contribution)}" if written_entries(contribution) <= RESULT_ENTRIES else \
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
    early = out_of_order(G)  # (ops an engine ran before their result's gradient was whole)
    top = differentiated(G, names)
    captions = [_seed_caption(G, names, top)]
    # A value that earlier backward passes reached already has a gradient: the
    # last pass, which the steps show, adds to it (+=) from its first share on.
    # So has a rolled loop's weight from the repetitions after the one drawn (rolling.py).
    looped = G.graph.get("loop_before", {})
    had_gradient = set(G.graph.get("seeds", {})) | set(looped) | {
        v for v, passes in G.nodes(data="passes") if passes and passes > 1}
    reached: set = set()  # the values a drawn share of this pass has reached
    shares_of: dict[Any, int] = {}  # how many shares of this pass each value gets
    for u, _, grad in G.edges(data="grad"):
        if grad is not None and G.nodes[u].get("role") != "const":
            shares_of[u] = shares_of.get(u, 0) + 1
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
        first_shares: list = []  # (values used again, whose first share this step sends)
        op_attrs = G.nodes[step.op]
        spec = ops.get(op_attrs["op"])
        result_attrs = G.nodes[step.result]
        upstream = partial_name(top, names[step.result])
        upstream_number = step.grads.get(step.result)
        shares = rule_shares(G, step, upstream_number)
        written = rule_shares(G, step, upstream_number, precision) if any(  # (lines write them)
            written_entries(G.edges[edge].get("grad")) <= RESULT_ENTRIES
            for edge in step.edges) else None
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
            if sign == "=" and shares_of.get(u, 0) > 1:
                first_shares.append(u)
            worked += lines
            per_edge.append(((u, v, key), tuple(lines)))
        # Constants left out of the equation still hold a gradient from now on.
        sent = {u for u, v, key in step.edges if G.edges[u, v, key].get("grad") is not None}
        had_gradient.update(sent)
        reached.update(sent)
        rule = spec.rule
        if step.op in early:  # (what its equations call ∂o/∂n is what had come of it)
            arrived = "none of it had arrived" if upstream_number is None else \
                f"only {number_text(upstream_number)} of it had arrived"
            rule += (f"; this engine ran it before the {G.nodes[early[step.op]]['symbol']} "
                     f"that uses {names[step.result].text}, when {arrived}: the "
                     f"{upstream.text} its lines use is not the chain rule's")
        if spec.gate_note and np.any(op_attrs.get("dead", False)):
            rule += "; " + spec.gate_note
        if first_shares and not any(" += " in text for text in texts):
            # (a fork's first share, which readers took for the whole gradient)
            said = listed([names[u].text for u in dict.fromkeys(first_shares)])
            rule += f"; {said}: a first share, more to come"
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
