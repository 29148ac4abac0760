"""``backpropviz check`` through the command line: 0 right, 1 wrong (named), 2 cannot grade.

The scripts are a student's: an engine imported from the file beside them, a loss,
``backward()``, sometimes a step of gradient descent after it.
"""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from backpropviz.cli import main

ROOT = Path(__file__).resolve().parent.parent
CAPSTONE = ROOT / "examples" / "capstone"
STUDENTS = ROOT / "tests" / "engines" / "students.py"


def check(tmp_path: Path, source: str, capsys, *args: str) -> tuple[int, str, str]:
    """Run ``backpropviz check student.py ARGS`` on ``source`` beside the students' engines."""
    shutil.copy(STUDENTS, tmp_path / "students.py")
    shutil.copy(CAPSTONE / "student_value.py", tmp_path / "student_value.py")
    script = tmp_path / "student.py"
    script.write_text(source)
    status = main(["check", str(script), *args])
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def svg_text(path: Path) -> str:
    return " ".join("".join(element.itertext()) for element in ET.parse(path).iter()
                    if element.tag.endswith("text"))


# ---------------------------------------------------------------- 0 and 1


NEURON = """
from students import {engine} as Value

x = Value(0.5, label="x")
w = Value(-1.5, label="w")
b = Value(0.8, label="b")
h = (x * w + b).tanh()
L = h * x + h
L.backward()
"""


def test_a_right_engine_exits_0_and_its_picture_says_so(tmp_path, capsys):
    status, out, _ = check(tmp_path, NEURON.format(engine="Correct"), capsys,
                           "-o", str(tmp_path / "report.svg"))
    assert status == 0, out
    assert out.strip() == "all 8 gradients match the reference"
    assert "check: all 8 gradients match the reference" in svg_text(tmp_path / "report.svg")


def test_wrong_gradients_exit_1_named_and_the_cause_is_in_the_picture(tmp_path, capsys):
    # By hand: h = tanh(0.05); dL/dh = x + 1 = 1.5, but the student's × writes = where
    # += belongs, so h keeps x · 1 = 0.5 and every gradient below it is a third.
    report = tmp_path / "report.svg"
    status, out, _ = check(tmp_path, NEURON.format(engine="Overwrites"), capsys,
                           "-o", str(report))
    assert status == 1, out
    match = re.search(r"^  h\s+got (\S+), expected (\S+)$", out, re.M)
    assert match and float(match.group(1)) == 0.5 and float(match.group(2)) == 1.5
    cause = next(line for line in out.splitlines() if line.startswith("cause: "))
    start = next(line for line in out.splitlines() if line.startswith("where it starts: "))
    assert "write += in every _backward" in cause
    drawn = svg_text(report)
    assert cause in drawn and start in drawn
    assert "check: 6 of 8 gradients differ from the reference" in drawn


def test_the_capstones_report_picture_carries_its_cause(tmp_path, capsys):
    report = tmp_path / "report.svg"
    status = main(["check", str(CAPSTONE / "forked_neuron.py"), "-o", str(report)])
    out, _ = capsys.readouterr()
    assert status == 1
    drawn = svg_text(report)
    assert ("cause: h is used more than once, so its gradient has several shares: write += "
            "in every _backward (gradients accumulate at forks)") in drawn
    assert out.splitlines()[-1] in drawn


# ---------------------------------------------------------------- updates after backward


SGD_OWN = """
from backpropviz import Value

w = Value(2.0, label="w")
x = Value(3.0, label="x")
b = Value(1.0, label="b")
L = w * x + b
L.backward()
lr = 0.1
w.data -= lr * w.grad   # one step of gradient descent
"""


def test_an_update_after_backward_in_backpropviz_is_graded_as_the_values_were_used(
        tmp_path, capsys):
    # By hand: L = w x + b at w = 2, x = 3: dL/dx = w = 2 (not the updated w = 2 − 0.1 · 3).
    status, out, _ = check(tmp_path, SGD_OWN, capsys)
    assert status == 0, out
    assert out.splitlines()[0] == "all 5 gradients match the reference"
    assert f"w changed after backward() (2 → {2 - 0.1 * 3:g})" in out


@pytest.mark.parametrize("update", ["w.data -= lr * w.grad", "b.data -= lr * b.grad"])
def test_an_update_after_backward_in_a_students_engine_cannot_be_graded(
        tmp_path, capsys, update):
    # The student's objects hold only the updated numbers: the gradients no longer
    # follow from them (w), or the forward value does not (b): 2, with the reason.
    source = SGD_OWN.replace("from backpropviz import Value", "from student_value import Value")
    status, out, err = check(tmp_path, source.replace("w.data -= lr * w.grad", update), capsys)
    assert status == 2, out + err
    line = one_line_error(err)
    assert "p.data -= lr * p.grad" in line and "before any update" in line, line
    assert out == ""


# ---------------------------------------------------------------- 2: what cannot be graded


def test_a_pytorch_script_is_sent_to_render(tmp_path, capsys):
    source = """
import torch

w = torch.tensor([0.5, -1.0], requires_grad=True)
x = torch.tensor([2.0, 1.0])
L = (w * x).sum() ** 2
L.backward()
print(w.grad)
"""
    status, out, err = check(tmp_path, source, capsys)
    assert status == 2
    line = one_line_error(err)
    assert "check grades a hand-written engine" in line
    assert f"backpropviz render {tmp_path / 'student.py'}" in line
    # The script ran as python runs it: PyTorch's gradient, 2 (w·x) x = [0, 0] here.
    assert "tensor([0., 0.])" in out


@pytest.mark.parametrize("engine_import", ["from students import Correct as Value",
                                           "from student_value import Value",
                                           "from backpropviz import Value"])
def test_a_script_that_never_calls_backward_is_told_so(tmp_path, capsys, engine_import):
    source = f"""
{engine_import}

a = Value(2.0, label="a")
b = Value(-3.0, label="b")
L = a * b + a
print("L =", L.data)
"""
    status, out, err = check(tmp_path, source, capsys)
    assert status == 2
    assert "L = -4.0" in out
    assert one_line_error(err).endswith(
        "the script never calls backward(), so there is nothing to check: add L.backward() "
        "at its end")


def test_a_script_whose_work_is_in_main_without_backward_is_told_so(tmp_path, capsys):
    source = """
from student_value import Value


def main():
    a = Value(2.0)
    L = a * a
    print(L.data)


main()
"""
    status, _, err = check(tmp_path, source, capsys)
    assert status == 2
    assert "the script never calls backward()" in one_line_error(err)



def test_a_script_without_any_graph_is_told_there_is_none(tmp_path, capsys):
    # Nothing of an engine at all: not "never calls backward()", but no graph.
    status, _, err = check(tmp_path, "import math\nprint(math.sqrt(2))\n", capsys)
    assert status == 2
    line = one_line_error(err)
    assert "no graph found" in line and "backward" not in line
