"""What a script's source says of its names: which plain numbers name constants, and
which loop variables name nothing.

A constant the graph holds is named after the script's number that equals it
(``lam = 0.1``), or the arithmetic on its numbers that made it (``lambd / 2``),
unless the number is also written as a literal, counts something, or is a loop's
counter. A loop variable left on something the script keeps elsewhere (``for p
in model.parameters()``) is not a name of it.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping
from typing import Any

from .builder import attribute_names, listed_parameters

__all__ = ["number_names", "syntax", "without_loop_aliases"]


def syntax(source: str) -> ast.AST | None:
    """The script's syntax tree (None if it has none: then no name is read from it)."""
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _loop_names(tree: ast.AST, *, comprehensions: bool = False) -> set[str]:
    """The names a ``for`` loop binds (and a comprehension's, with ``comprehensions``)."""
    kinds = (ast.For, ast.comprehension) if comprehensions else (ast.For,)
    return {name.id for node in ast.walk(tree) if isinstance(node, kinds)
            for name in ast.walk(node.target) if isinstance(name, ast.Name)}


def without_loop_aliases(namespace: dict[str, Any], tree: ast.AST | None) -> dict[str, Any]:
    """The namespace less the loop variables that hold what the script keeps elsewhere
    (``for p in model.parameters()`` leaves ``p`` on the last parameter, which is
    ``model.layers[1].neurons[0].b``): such a value is named by its own path, pass
    after pass, not by whichever one the loop stopped at."""
    loops = _loop_names(tree) if tree is not None else set()
    looped = {id(namespace[name]): name for name in loops if name in namespace}
    if not looped:
        return namespace
    rest = {name: obj for name, obj in namespace.items() if name not in loops}
    held = set(attribute_names(rest, lambda obj: id(obj) in looped))
    held |= set(listed_parameters(rest)) & set(looped)  # (however deep a model keeps them)
    return {name: obj for name, obj in namespace.items()
            if not (id(obj) in held and looped.get(id(obj)) == name)}


def number_names(namespace: Mapping[str, Any], tree: ast.AST | None) -> dict[str, float]:
    """The script's global names bound to plain numbers (``lam = 0.1``) that its
    arithmetic uses (``lam * s``), less those whose number is also written as a
    literal anywhere else in it (``/ 2``, ``xs = [3.0, 2.0]``, ``range(2)``): a
    constant equal to such a number may be that literal, so the name would be a guess."""
    if tree is None:
        return {}
    definitions = set()  # the literal each `name = 0.1` binds (its own, not another use)

    def define(value: ast.AST) -> None:
        definitions.add(id(value.operand if isinstance(value, ast.UnaryOp) else value))

    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        if all(isinstance(t, ast.Name) for t in node.targets):
            define(node.value)
        elif (len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple)
              and isinstance(node.value, ast.Tuple)
              and len(node.targets[0].elts) == len(node.value.elts)):
            for value in node.value.elts:  # x, y = Tensor(...), 0
                define(value)
    parent = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def may_be_drawn(constant: ast.Constant) -> bool:
        """Whether a literal can be a scalar the graph uses: in arithmetic, in a list of
        numbers a loop runs over (not a matrix handed to Tensor([...])), range(2)."""
        above = parent.get(id(constant))
        if isinstance(above, ast.UnaryOp):  # -1.0 is one literal
            above = parent.get(id(above))
        if isinstance(above, (ast.BinOp, ast.Compare, ast.AugAssign)):
            return True
        if not isinstance(above, (ast.List, ast.Tuple, ast.Call)):
            return False
        while isinstance(above, (ast.List, ast.Tuple)):
            above = parent.get(id(above))
        if isinstance(above, ast.Call):
            return isinstance(above.func, ast.Name) and above.func.id == "range"
        return True

    literals, used = set(), set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and type(node.value) in (int, float)
                and id(node) not in definitions and may_be_drawn(node)):
            literals.add(float(node.value))
            literals.add(-float(node.value))  # (x - 1 is drawn with −1)
        if isinstance(node, (ast.BinOp, ast.AugAssign)):
            used.update(name.id for name in ast.walk(node) if isinstance(name, ast.Name))
    # A loop's counter holds a new number each time round (sum()'s 0 is not k).
    counters = _loop_names(tree, comprehensions=True)
    # Nor is a count a call takes (view(B, T, heads, ...)) or one that divides (C // heads).
    counters |= {arg.id for node in ast.walk(tree) if isinstance(node, ast.Call)
                 for arg in node.args if isinstance(arg, ast.Name)}
    counters |= {part.id for node in ast.walk(tree) if isinstance(node, ast.BinOp)
                 and isinstance(node.op, (ast.FloorDiv, ast.Mod))
                 for part in (node.left, node.right) if isinstance(part, ast.Name)}
    numbers = {name: float(value) for name, value in namespace.items()
               if type(value) in (int, float) and not name.startswith("_")
               and name not in counters}
    named = {name: number for name, number in numbers.items()
             if name in used and number not in literals}
    for expression, number in _number_expressions(tree, numbers).items():
        if number not in literals:
            named.setdefault(expression, number)
    return named


_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.Div: operator.truediv, ast.Pow: operator.pow}


def _number_expressions(tree: ast.AST, numbers: Mapping[str, float]) -> dict[str, float]:
    """The arithmetic the script does on plain numbers only, with at least one of its
    names (``lambd / 2`` in ``lambd / 2 * penalty``), as written (spaces kept only
    around + and −) and its value as Python computed it: a constant the graph holds
    with that value came from that expression."""
    found: dict[str, float] = {}

    def value(node: ast.AST) -> float | None:
        if isinstance(node, ast.Name):
            return numbers.get(node.id)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            left, right = value(node.left), value(node.right)
            if left is None or right is None:
                return None
            try:
                return float(_ARITHMETIC[type(node.op)](left, right))
            except (ArithmeticError, TypeError):  # (a complex power, 1 / 0)
                return None
        return None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.BinOp) and any(isinstance(part, ast.Name)
                                               for part in ast.walk(node)):
            number = value(node)
            if number is not None:  # the largest such expression, not its parts
                text = ast.unparse(node)
                for spaced, tight in ((" / ", "/"), (" * ", "·")):
                    text = text.replace(spaced, tight)
                found.setdefault(text, number)
                return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found
