"""The practice page's questions: at each backward step, the gradients it produces,
asked one by one, with the rule, a hint and the worked line of captions.py."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .captions import step_captions
from .dot import edge_id
from .errors import DrawError
from .formatting import MAX_ITEMS, format_array, number_text
from .names import differentiated, partial_name, subscripted, value_names
from .steps import backward_steps
from .worked import not_the_chain_rules

__all__ = ["FORK_RULE", "GATE_CHOICES", "practice_questions"]

FORK_RULE = "a value used twice adds up its gradients (+=)"
# Why a dead ReLU's gradient is zero: the right answer first (the page shuffles
# nothing: the order is part of the lesson's text), then two common mistakes.
GATE_CHOICES = (
    "its input {x} is ≤ 0 there, so the gate 1[{x} > 0] is 0",
    "ReLU passes only positive gradients back",
    "{x} was not used in the forward pass",
)
GATE_HINT = ("a ReLU's local derivative is 1[{x} > 0]: it depends on its input {x}, "
             "not on the sign of the gradient that arrives")


def _cells(x: Any, precision: int) -> list[list[str]] | None:
    """A number or array as the page draws it (a true minus sign), or None where the
    drawing elides entries (too large to type in)."""
    cells = [[cell.replace("-", "\u2212") for cell in row]
             for row in format_array(x, precision, MAX_ITEMS)]
    return None if any(cell in ("…", "⋮", "⋱") for row in cells for cell in row) \
        else cells


def _asking(line: str, answer: str, prompt: str) -> str:
    """A worked line with its last number, the answer, replaced by ``?``; the prompt
    and a ``?`` where the line does not end with the answer (a student's engine whose
    rule sent another number: its line says so, and is shown only as the worked line)."""
    if line.endswith(")"):  # what the engine did instead, in parentheses: not asked
        line = line[:line.rfind(" (")]
    for equals in (" = ", " ≈ "):  # (≈ before a result rounded as written)
        if line.endswith(equals + answer):
            return line[:-len(equals + answer)] + equals + "?"
    return f"{prompt} ?"


def _number_question(value: str, edge: str | None, prompt: str, expect: list[list[str]],
                     rule: str, line: str, answer: str) -> dict[str, Any]:
    return {"kind": "number", "value": value, "edge": edge, "prompt": prompt,
            "expect": expect, "rule": rule, "hint": f"{rule}: {_asking(line, answer, prompt)}",
            "worked": line, "reveals": []}


def _gate_question(G: nx.MultiDiGraph, operand: Any, names: dict, left: str, line: str,
                   rule: str) -> dict[str, Any]:
    """Why a dead ReLU's gradient is zero where it is: a choice, the gate first."""
    x = names[operand].text
    where = " where it is" if G.nodes[operand]["shape"] else ""
    return {"kind": "choice", "value": str(operand), "edge": None,
            "prompt": f"Why is {left} zero{where}?",
            "choices": [choice.format(x=x) for choice in GATE_CHOICES], "answer": 0,
            "rule": rule, "hint": GATE_HINT.format(x=x),
            "worked": line, "reveals": []}


def _step_questions(G: nx.MultiDiGraph, step: Any, caption: Any, names: dict, top: Any,
                    precision: int) -> list[dict[str, Any]]:
    """The questions of one backward step, in the caption's order: each edge's share
    (at a fork, then the sum), and at a dead ReLU why it passed nothing."""
    if step.op is None:  # a rolled loop's closing step: no op's rule to practise
        return []
    spec = ops.get(G.nodes[step.op]["op"])
    questions: list[dict[str, Any]] = []
    for (u, v, key), lines in caption.edges:
        edge = G.edges[u, v, key]
        left = partial_name(top, names[u]).text
        forked = lines[0].startswith(left + " += ")
        running = edge.get("running")
        # At a fork the share on the edge, else what lands in the value's slot (the
        # same number, unless a student's engine overwrote the gradient instead).
        answer = edge["grad"] if forked or running is None else running
        expect = _cells(answer, precision)
        if expect is None:
            continue
        prompt = f"{left} {'+=' if forked else '='}"
        questions.append(_number_question(str(u), edge_id(u, v, key), prompt, expect,
                                          spec.rule, lines[0], number_text(answer, precision)))
        total = None if running is None else _cells(running, precision)
        if forked and len(lines) > 1 and total is not None:
            questions.append(_number_question(str(u), None, f"the sum: {left} =", total,
                                              FORK_RULE, lines[1],
                                              number_text(running, precision)))
        if spec.gate is not None and np.any(G.nodes[step.op].get("dead", False)):
            questions.append(_gate_question(G, u, names, left, lines[0], spec.gate_note))
    _mark_reveals(questions)
    return questions


def _mark_reveals(questions: list[dict[str, Any]]) -> None:
    """What each answer uncovers in the drawing: its edge, and the value's gradient
    at the value's last question of the step (before it, the slot would give the
    sum away)."""
    last = {question["value"]: index for index, question in enumerate(questions)}
    for index, question in enumerate(questions):
        if question["edge"] is not None:
            question["reveals"].append(question["edge"])
        if last[question["value"]] == index:
            question["reveals"].append(question["value"])


def practice_questions(G: nx.MultiDiGraph, precision: int = 4) -> list[list[dict[str, Any]]]:
    """For every state of the backward pass (step 0, the seed, asks nothing), what
    the practice page asks: the gradients the step produces, each expected as drawn
    (``expect``, cells at ``precision``), with its ``rule``, a ``hint`` (the worked
    line with its operands put in and the answer left as ``?``), the ``worked``
    line, and the ids it ``reveals`` once answered. A fork asks for each share and
    then the sum; a dead ReLU asks why its gradient is zero (``choices``, ``answer``).
    Its words write names as the figure does (names.subscripted: W₁, not W1).
    """
    names = value_names(G)
    wrong = not_the_chain_rules(G)
    if wrong:  # (a student's engine whose backward pass is not the chain rule)
        shown = [subscripted(names[value].text) for value in wrong[:3]]
        more = len(wrong) - len(shown)
        which = (f"the gradient of {shown[0]} differs" if len(wrong) == 1 else
                 f"the gradients of {', '.join(shown[:-1])} and {shown[-1]} differ" if not more
                 else f"the gradients of {', '.join(shown)} and {more} more differ")
        raise DrawError(
            "--practice asks for the chain rule's gradients, and this engine's backward "
            f"pass does not give them ({which}): the page would mark the rule's answers "
            "wrong; run backpropviz check on the script to find why, or draw the page "
            "without --practice")
    top = differentiated(G, names)
    captions = step_captions(G, precision)
    asked = [_step_questions(G, step, caption, names, top, precision)
             for step, caption in zip(backward_steps(G), captions[1:], strict=True)]
    for question in (question for step in asked for question in step):
        for key in ("prompt", "hint", "worked", "rule"):
            question[key] = subscripted(question[key])
        if "choices" in question:
            question["choices"] = [subscripted(choice) for choice in question["choices"]]
    return [[], *asked]
