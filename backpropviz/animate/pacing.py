"""How long each beat of the clip lasts, by what it means: held, brief, or quicker the second time.

Read from the IR and the captions alone (no manim), so the pacing can be
checked without drawing a frame. A beat is one of:

- ``held``: the seed, a fork (a value's gradients add up within the pass), a dead
  ReLU, the last step when it gives parameters their gradients: the surprising
  moments and the closing one, held longer;
- ``brief``: a step whose rule only passes the gradient on (``+``, ``−``, ``Σ``),
  or divides it by a constant (``÷ 2``): quick, with its rule shown only if short;
- ``again``: a rule the viewer has seen already: quicker, its rule not repeated;
- ``new``: any other step, at the normal pace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from string import Template
from typing import Any

import networkx as nx
import numpy as np

from .. import ops
from ..captions import Caption, step_form

__all__ = ["HELD_EXTRA", "HOLD_FLOOR", "READING_CPS", "Pace", "durations", "factor_sources",
           "forward_pace", "frames_up", "pace_of", "reading_time", "seed_pace", "share_pace",
           "shown_rule"]

# A cue stays until it can be read at READING_CPS characters a second, and never
# less than HOLD_FLOOR seconds; a held beat stays HELD_EXTRA seconds more.
READING_CPS, HOLD_FLOOR, HELD_EXTRA = 17.0, 2.0, 1.0
# A brief step shows its rule only if it is at most this long (a long rule, like
# divide's, is read in the equation itself: ∂L/∂L / 2 = 1 / 2 = 0.5).
SHORT_RULE = 48

# A forward op of a kind already computed plays at this factor of the first one's times.
FORWARD_AGAIN = 0.55
# The motion's speed for each kind of beat (1: the normal pace).
_MOTION = {"held": 1.0, "new": 1.0, "again": 0.6, "brief": 0.45}
# The number fields of a derivative that are local factors read from a box:
# an operand's value (a, its power a_pow, b) or the result's (r).
_FACTORS = {"a": 0, "a_pow": 0, "b": 1}


@dataclass(frozen=True)
class Pace:
    """One beat's pace: its ``kind``, the factor on its motion's durations, and how long
    its words are held beyond the reading time."""

    kind: str
    motion: float
    extra: float
    seen: bool = False  # the step's rule was shown before

    @property
    def held(self) -> bool:
        return self.kind == "held"


def _pace(kind: str, seen: bool = False) -> Pace:
    # A held step of a rule seen before is held for its words; its motion is known.
    motion = _MOTION["again"] if kind == "held" and seen else _MOTION[kind]
    return Pace(kind, motion, HELD_EXTRA if kind == "held" else 0.0, seen)


def share_pace(pace: Pace, index: int) -> Pace:
    """The pace of a step's share number ``index`` (0: the first): after the first,
    the same rule is seen again, so it moves at the pace of a rule seen before."""
    if index == 0:
        return pace
    return replace(pace, motion=min(pace.motion, _MOTION["again"]))


def factor_sources(G: nx.MultiDiGraph, step: Any, edge: tuple) -> list[Any]:
    """The boxes whose forward value is a factor of ``edge``'s local derivative, as the
    registry's numbers template reads them: operand values (``$a``, ``$b``) or the
    result (``$r``); [] for a rule that passes the gradient on."""
    form = step_form(G, step)
    arg = G.edges[edge]["arg"]
    if arg >= len(form.numbers):
        return []
    used = Template(form.numbers[arg]).get_identifiers()
    operands = [u for u, _, _ in step.edges]
    sources = [operands[_FACTORS[name]] for name in used
               if name in _FACTORS and _FACTORS[name] < len(operands)]
    if "r" in used:
        sources.append(step.result)
    return list(dict.fromkeys(sources))


def _dead(G: nx.MultiDiGraph, op: Any) -> bool:
    return bool(np.any(G.nodes[op].get("dead", False)))


def _brief(G: nx.MultiDiGraph, step: Any) -> bool:
    """Whether every share the step sends is the gradient passed on, or scaled by a
    constant only (no gate, no mask, no value of the graph's own as a factor)."""
    attrs = G.nodes[step.op]
    spec = ops.get(attrs["op"])
    if spec.gate is not None or spec.masked or attrs["op"] not in ops.names():
        return False
    for edge in step.edges:
        if G.edges[edge].get("grad") is None or G.nodes[edge[0]].get("role") == "const":
            continue
        if any(G.nodes[source].get("role") != "const"
               for source in factor_sources(G, step, edge)):
            return False
    return True


def pace_of(G: nx.MultiDiGraph, step: Any, rules_seen: set[str], last: bool) -> Pace:
    """The pace of backward ``step`` (one of ``backward_steps(G)``), given the rules the
    viewer has seen (by op name; this step's is added) and whether it is the last step.
    A rolled loop's closing step (no op: the repetitions not drawn send their shares) is
    held, as a fork is."""
    if step.op is None:
        seen = "loop" in rules_seen
        rules_seen.add("loop")
        return _pace("held", seen)
    name = G.nodes[step.op]["op"]
    seen = name in rules_seen
    rules_seen.add(name)
    forked = any(G.nodes[u].get("role") != "const" for u in step.accumulated)
    # The last step that gives parameters their gradients closes the lesson.
    closing = last and any(G.nodes[u].get("role") == "param" for u, _, _ in step.edges)
    if forked or _dead(G, step.op) or closing:
        return _pace("held", seen)
    if _brief(G, step):
        return _pace("brief", seen)
    return _pace("again" if seen else "new", seen)


def seed_pace() -> Pace:
    """The seed: where the backward pass starts, held."""
    return _pace("held")


def shown_rule(G: nx.MultiDiGraph, step: Any, caption: Caption, pace: Pace) -> str:
    """The rule line a step shows: the whole rule the first time; for a rule seen before
    only what is new about this step (a fork's +=, the dead units); for a brief step
    its rule if it is short. "" for none. A rolled loop's closing step says its whole."""
    if step.op is None:
        return caption.rule
    rule = ops.get(G.nodes[step.op]["op"]).rule
    notes = caption.rule[len(rule):].lstrip("; ") if caption.rule.startswith(rule) else ""
    if pace.seen or (pace.kind == "brief" and len(caption.rule) > SHORT_RULE):
        return notes
    return caption.rule


def reading_time(text: str) -> float:
    """The seconds it takes to read ``text``: at READING_CPS, at least HOLD_FLOOR."""
    return max(HOLD_FLOOR, len(text.replace("\n", " ")) / READING_CPS)


def forward_pace(op: str, seen: set[str]) -> float:
    """The factor on a forward op's motion: 1 the first time an op of its kind computes,
    FORWARD_AGAIN after (``seen``: the kinds played so far; this one is added)."""
    again = op in seen
    seen.add(op)
    return FORWARD_AGAIN if again else 1.0


def frames_up(seconds: float, frame_rate: float) -> float:
    """``seconds`` rounded up to whole frames, so that a wait is never cut short."""
    return math.ceil(seconds * frame_rate - 1e-6) / frame_rate


def durations(pace: Pace, speed: float) -> Mapping[str, float]:
    """The seconds of each part of a share's motion at ``pace`` and ``speed``: the
    upstream gradient's travel, its meeting the local derivative, the product's landing."""
    return {part: seconds * pace.motion / speed
            for part, seconds in (("travel", 0.7), ("meet", 0.45), ("land", 0.45),
                                  ("total", 0.5))}
