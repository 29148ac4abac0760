"""The IR's text form: one line per value, against golden files; the same for every producer.

Regenerate the golden text files after an intended change with
``BACKPROPVIZ_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/test_text.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from backpropviz import Tensor, Value
from backpropviz.ir import to_networkx
from backpropviz.script import without_gradients
from backpropviz.text import to_text

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.mark.parametrize("name", ["add_mul", "d2l_mlp", "d2l_objective"])
def test_text_matches_golden_file(example, name):
    text = to_text(example(name))
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("BACKPROPVIZ_REGEN_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_a_line_says_the_op_its_operands_and_the_engines_numbers():
    a, b, c = Value(2.0, label="a"), Value(1.0, label="b"), Value(-3.0, label="c")
    d = a + b
    d.label = "d"
    e = d * c
    e.label = "e"
    e.backward()
    lines = to_text(to_networkx(e)).splitlines()
    assert re.fullmatch(r"e = mul\(d, c\)\s+data -9\s+grad 1", lines[4])
    assert re.fullmatch(r"a = input\s+data 2\s+grad -3", lines[0])
    assert lines[5:] == ["# backward from e (seed 1)", "# backward order: e, d"]
    # Before backward: the data only.
    assert to_text(without_gradients(to_networkx(e))).splitlines()[4].split() == [
        "e", "=", "mul(d,", "c)", "data", "-9"]


def test_arrays_are_shown_by_shape_and_small_ones_by_their_numbers():
    W = Tensor([[1.0, -1.0], [0.5, 2.0]], label="W")
    big = Tensor([[float(i) for i in range(10)]] * 3, label="big")
    s = (W.sum() + big.sum())
    s.label = "s"
    text = to_text(to_networkx(s))
    assert re.search(r"W = input\s+data \[2x2\] \[\[1, -1\], \[0.5, 2\]\]\n", text)
    assert re.search(r"big = input\s+data \[3x10\] min 0 max 9", text)


def test_two_values_of_one_name_are_told_apart_by_their_ids():
    x = Value(1.0, label="h")
    y = (x * 2.0)
    y.label = "h"
    text = to_text(to_networkx(y))
    assert "h#v0 = input" in text and "h#v2 = mul(h#v0, 2)" in text


def test_a_number_used_twice_is_written_as_its_number_both_times():
    # c = a·b − 1, d = c·c − 1: two constants −1, each its own number (no ids).
    a, b = Value(2.0, label="a"), Value(-3.0, label="b")
    c = a * b - 1
    c.label = "c"
    d = c * c - 1
    d.label = "d"
    d.backward()
    text = to_text(to_networkx(d))
    assert "c = sub(a·b, 1)" in text and "d = sub(c·c, 1)" in text and "#" not in \
        text.split("# backward")[0]
    assert text.count("1 = const") == 2


def test_the_text_is_the_same_for_the_engine_and_pytorch(example):
    pytest.importorskip("torch")
    ours = to_text(example("d2l_mlp"))
    theirs = to_text(example("torch_mlp"))
    # torch computes no gradient for an input without requires_grad, nor for a number.
    for mine, torch_line in zip(ours.splitlines(), theirs.splitlines(), strict=True):
        if "grad" in torch_line or torch_line.startswith("#"):
            assert mine == torch_line
        else:
            assert mine.startswith(torch_line) and mine.split()[0] in {"x", "y", "2"}
