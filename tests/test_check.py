"""``backpropviz check``: students' engines (tests/engines/students.py) against the reference."""

from __future__ import annotations

import math
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from backpropviz.script import graph_of_script
from tests.in_process import run_cli

ROOT = Path(__file__).resolve().parent.parent
ENGINES = Path(__file__).resolve().parent / "engines"


def check(script: Path | str, *args: str, engine: str | None = None,
          cwd: Path = ENGINES) -> subprocess.CompletedProcess:
    """``backpropviz check SCRIPT ARGS`` in this process, the student's engine named by
    $ENGINE (tests/in_process.py: the same command, without a process's start-up)."""
    env = {**os.environ, **({"ENGINE": engine} if engine else {})}
    return run_cli("check", script, *args, cwd=cwd, env=env, text=True)


def reference_gradients() -> dict[str, float]:
    """graded.py's gradients by hand: z = xw + b, h = tanh z, L = h x + h."""
    x, w, b = 0.5, -1.5, 0.8
    h = math.tanh(x * w + b)
    dh = x + 1  # L = h (x + 1)
    dz = dh * (1 - h ** 2)
    return {"x": h + dz * w, "w": dz * x, "b": dz, "z": dz, "h": dh}


@pytest.mark.parametrize("script", ["graded.py", "neuron.py", "micrograd_readme.py",
                                    "twice.py", "difference.py"])
def test_right_engines_pass(script):
    done = check(script)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("all ") and done.stdout.strip().endswith(
        "gradients match the reference")


@pytest.mark.parametrize("example", ["add_mul", "d2l_mlp_scalar", "fork"])
def test_the_built_in_engine_passes(example):
    done = check(ROOT / "examples" / f"{example}.py", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "match the reference" in done.stdout


def wrong_values(stdout: str) -> dict[str, tuple[float, float]]:
    lines = (re.fullmatch(r"  (.+?)\s+got (\S+), expected (\S+)", line)
             for line in stdout.splitlines())
    number = lambda text: float(text.replace("−", "-"))  # (the report writes a minus)
    assert "-" not in re.sub(r"[A-Za-z_]-[A-Za-z]|--\S+", "", stdout)  # (a minus, no hyphen)
    return {m.group(1): (number(m.group(2)), number(m.group(3))) for m in lines if m}


def test_equals_instead_of_plus_equals_is_found_at_the_fork():
    done = check("graded.py", engine="Overwrites")
    assert done.returncode == 1
    wrong = wrong_values(done.stdout)
    reference = reference_gradients()
    for name, (_, expected) in wrong.items():
        if name in reference:
            assert expected == pytest.approx(reference[name], rel=1e-5)
    assert wrong["h"][0] == pytest.approx(0.5)  # only y = h·x's share x survived
    assert "where it starts: the × giving y" in done.stdout
    assert "replaced the gradient of h" in done.stdout
    assert "write += in every _backward (gradients accumulate at forks)" in done.stdout


def test_a_wrong_local_derivative_is_named_with_its_rule():
    done = check("graded.py", engine="WrongTanh")
    assert done.returncode == 1
    assert "where it starts: the tanh giving h" in done.stdout
    assert "the local derivative of tanh is wrong: tanh multiplies the gradient by 1 − tanh²" \
        in done.stdout
    assert "h" not in wrong_values(done.stdout)  # h's own gradient is right


def test_a_wrong_topological_order_is_found():
    done = check("graded.py", engine="WrongOrder")
    assert done.returncode == 1
    assert "reverse topological order" in done.stdout
    assert "before the + giving z" in done.stdout


def test_a_missing_seed_is_found():
    done = check("graded.py", engine="NoSeed")
    assert done.returncode == 1
    assert "the output L has gradient 0: backward() must start by setting it to 1" in done.stdout
    assert len(wrong_values(done.stdout)) == 8


def test_the_report_picture_marks_the_wrong_gradients(tmp_path):
    out = tmp_path / "report.svg"
    done = check("graded.py", "-o", str(out), engine="Overwrites")
    assert done.returncode == 1
    svg = ET.parse(out).getroot()
    groups = {g.get("id"): g for g in svg.iter("{http://www.w3.org/2000/svg}g")}
    wrong = [g for g in groups.values() if "wrong" in (g.get("class") or "").split()]
    assert len(wrong) == len(wrong_values(done.stdout))
    texts = ["".join(t.itertext()) for g in wrong for t in g.iter("{http://www.w3.org/2000/svg}text")]
    assert any(text.startswith("expected") for text in texts)
    starts = [g for g in groups.values() if "error-start" in (g.get("class") or "").split()]
    assert len(starts) == 1


def test_a_script_without_backward_is_told_to_add_it(tmp_path):
    script = tmp_path / "forgot.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ENGINES)!r})\n"
                      "from students import Correct as Value\n"
                      "a = Value(2.0)\nloss = (a * a).tanh()\n")
    done = check(script, cwd=tmp_path)
    assert done.returncode == 2  # could not check: not the same as wrong gradients (1)
    assert done.stderr.strip() == ("backpropviz: error: the script never calls backward(), so "
                                   "there is nothing to check: add loss.backward() at its end")


def test_a_report_in_an_unknown_format_is_refused_before_running(tmp_path):
    done = check("graded.py", "-o", str(tmp_path / "report.txt"))
    assert done.returncode == 2
    assert "unknown format for the report: 'txt'" in done.stderr


@pytest.mark.parametrize(("script", "root", "reason"), [
    ("twice_backward.py", None, "backward() ran 2 times and the gradients added up"),
    ("after_update.py", None, "values changed after backward(), e.g. an update"),
    ("from_later.py", "h", "backward() was not called on h"),
])
def test_gradients_that_are_not_one_backward_are_not_graded(script, root, reason):
    done = check(script, *([root] if root else []))
    assert done.returncode == 2
    assert "are not those of one backward()" in done.stderr and reason in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("script", ["ordered.py", "from_later.py"])
def test_tuple_children_and_negation_pass(script):
    done = check(script)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_expected_gradient_appears_with_the_gradient_in_the_step_views(monkeypatch):
    from backpropviz.check import check_script
    from backpropviz.diagram import draw

    monkeypatch.setenv("ENGINE", "Overwrites")
    monkeypatch.chdir(ENGINES)
    G = check_script("graded.py").graph
    first, last = draw(G, step=0).svg, draw(G).svg
    assert first.count(">expected ") == last.count(">expected ") > 0
    box = 'fill="#ffffff"'  # the first wrong value, x, is an input in a white box
    assert box in first.split(">expected ")[0].rsplit("<text", 1)[1]
    assert 'fill="#a3121f"' in last.split(">expected ")[0].rsplit("<text", 1)[1]


# A student's engine (students.py) with all the work in main(), as a student's script
# often is: its values live in main's locals, which check reads through the watched
# backward().
MAIN_SCRIPT = """
import sys
sys.path.insert(0, {engines!r})
from students import {engine} as Value


def main():
    a = Value(2.0)
    b = Value(-3.0)
    c = a * b
    d = c + a
    d.backward()
    print("a.grad is", a.grad)


if __name__ == "__main__":
    main()
"""


def check_in_process(tmp_path: Path, source: str, capsys) -> tuple[int, str]:
    from backpropviz.cli import main

    script = tmp_path / "student.py"
    script.write_text(source)
    status = main(["check", str(script)])
    out, err = capsys.readouterr()
    return status, out + err


def test_a_script_whose_work_is_in_main_is_graded(tmp_path, capsys):
    # d = a·b + a: dd/da = b + 1 = -2, dd/db = a = 2. The multiplication's rule writes
    # = instead of +=, so a's share from the addition (1) is replaced: a.grad = -3.
    status, report = check_in_process(
        tmp_path, MAIN_SCRIPT.format(engines=str(ENGINES), engine="Overwrites"), capsys)
    assert status == 1, report
    assert "a.grad is -3.0" in report  # the script ran as python runs it
    assert re.search(r"\ba\s+got −3, expected −2\b", report), report
    assert "inside a function" not in report
    assert "write += in every _backward" in report


def test_a_right_engine_in_main_passes(tmp_path, capsys):
    status, report = check_in_process(
        tmp_path, MAIN_SCRIPT.format(engines=str(ENGINES), engine="Correct"), capsys)
    assert status == 0, report
    assert "all 4 gradients match the reference" in report


@pytest.mark.parametrize(("engine", "said"), [
    ("Correct", None), ("WrongTanh", "1 op (tanh) sends a number its rule does not give"),
    # (an engine that overwrites sends the rule's shares, and keeps only the last)
    ("Overwrites", "1 gradient is not the sum of its shares"),
    # (one that never set the root's gradient follows every rule, from 0)
    ("NoSeed", "the backward pass started from a gradient of 0 at the root, not 1"),
    # (one that sweeps its order forwards follows every rule, from what had arrived)
    ("WrongOrder", "the × giving x·w ran before the + that uses x·w, so it sent on a "
                   "gradient that had not all arrived")])
def test_render_says_when_a_students_engine_is_not_the_chain_rule(tmp_path, engine, said):
    """The figure draws the engine's own numbers; render says, on stderr, when its
    backward is not the chain rule (and points to check), and says nothing for a right one."""
    script = tmp_path / "neuron.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ENGINES)!r})\n"
                      f"from students import {engine} as Value\n"
                      "x, w, b = Value(0.8), Value(-1.2), Value(0.3)\n"
                      "h = x * w + b\nloss = (h * x).tanh()\nloss.backward()\n")
    # (the steps and the figure both meet it: said once)
    done = run_cli("render", script, "--steps", tmp_path / "steps", "-o", tmp_path / "n.svg",
                   cwd=tmp_path, text=True)
    assert done.returncode == 0 and (tmp_path / "n.svg").exists()
    # (and its key says it, on the picture a student keeps)
    key = " ".join(ET.parse(tmp_path / "n.svg").getroot().itertext())
    if said is None:
        assert "chain rule" not in done.stderr
        assert "chain rule" not in key and "started from" not in key
    elif engine == "NoSeed":
        assert done.stderr.count(said) == 1 and "not the chain rule" not in done.stderr
        assert "backward started from a gradient of 0, not 1" in key
    else:
        assert done.stderr.count("this engine's backward pass is not the chain rule") == 1
        assert said in done.stderr and "backpropviz check" in done.stderr
        assert "this engine's gradients are not the chain rule's" in key


def test_a_clip_of_an_engine_that_never_seeded_says_so_on_its_cards(monkeypatch):
    """An engine that never set ∂L/∂L = 1 sends every rule's share of 0: its clip's title
    says the gradients are this engine's, not the chain rule's, and its recap says what
    it started from (the numbers it lists are its own zeros)."""
    pytest.importorskip("manim")
    from backpropviz.animate.cards import lessons, title_card
    from backpropviz.animate.mobjects import TextStore
    from backpropviz.style import THEMES

    graphs = {}
    for engine in ("NoSeed", "Correct"):
        monkeypatch.setenv("ENGINE", engine)
        graphs[engine] = graph_of_script(ENGINES / "graded.py", quiet=True)
    _, cue = title_card(graphs["NoSeed"], TextStore(), THEMES["light"], 4, backward=True)
    assert "by this engine's backward pass" in cue and "chain rule" not in cue
    (seeded,) = [said for said in lessons(graphs["NoSeed"]) if "started from" in said]
    assert seeded == ("this engine's backward started from ∂L/∂L = 0, not 1, and the chain "
                      "rule multiplies every gradient by it")
    _, cue = title_card(graphs["Correct"], TextStore(), THEMES["light"], 4, backward=True)
    assert "by the chain rule" in cue
    assert not [said for said in lessons(graphs["Correct"]) if "started from" in said]


def test_checks_own_figure_carries_its_verdict_and_no_note(tmp_path):
    done = check("overwritten_fork.py", "-o", str(tmp_path / "report.svg"))
    assert done.returncode == 1 and (tmp_path / "report.svg").exists()
    assert "not the chain rule" not in done.stderr


# A loop whose gradients add up from pass to pass (.grad never reset): the drawn pass's
# shares add to what the earlier passes left, which is no fault of the engine's.
NEVER_RESET = {
    "torch": '''
import torch
w = torch.tensor(1.5, requires_grad=True)
x = torch.tensor(2.0)
for i in range(3):
    loss = (w * x - 1.0) ** 2
    loss.backward()
''',
    "lecture": '''
import sys
sys.path.insert(0, {engines!r})
from lecture import Value
w, x = Value(0.8), Value(1.5)
for i in range(3):
    loss = (w * x - 0.5) * (w * x - 0.5)
    w.grad = 0.0  # (x's is never reset)
    loss.backward()
    w.data -= 0.1 * w.grad
''',
}


@pytest.mark.parametrize("kind", sorted(NEVER_RESET))
def test_gradients_added_up_over_passes_are_not_called_off_the_chain_rule(tmp_path, kind):
    if kind == "torch":
        pytest.importorskip("torch")
    from backpropviz.worked import off_the_rule

    source = NEVER_RESET[kind].replace("{engines!r}", repr(str(ENGINES)))
    script = tmp_path / "loop.py"
    script.write_text(source)
    # what .grad held before the last backward(), as the loop run by plain Python leaves it
    before = {}
    marked = source.replace("    loss.backward()", "    before = {n: None if v.grad is None "
                                                   "else float(v.grad) for n, v in "
                                                   "(('w', w), ('x', x))}\n    loss.backward()")
    exec(compile(marked, "<reference>", "exec"), before)
    held = {name: value for name, value in before["before"].items() if value}
    G = graph_of_script(script, quiet=True)
    drawn = {attrs["label"]: attrs.get("held_before") for _, attrs in G.nodes(data=True)
             if attrs.get("label") in ("w", "x")}
    assert drawn == {name: held.get(name) for name in ("w", "x")}
    assert held  # (something was held: x's, or torch's w's)
    assert off_the_rule(G) == ([], [])
    done = run_cli("render", script, "-o", tmp_path / "loop.svg", text=True)
    assert done.returncode == 0 and "not the chain rule" not in done.stderr


def test_the_steps_of_an_engine_that_sweeps_forwards_say_what_their_gradients_are(
        monkeypatch):
    # Its × ran before the + that uses x·w: its lines' ∂L/∂(x·w) is what had arrived then
    # (nothing), not the chain rule's, and its caption says so; the clip's title card and
    # recap name the engine's gradients as its own.
    from backpropviz.captions import step_captions
    from backpropviz.worked import not_the_chain_rules, out_of_order

    script = ENGINES / "graded.py"
    monkeypatch.setenv("ENGINE", "WrongOrder")
    G = graph_of_script(script, quiet=True)
    monkeypatch.delenv("ENGINE")
    early = out_of_order(G)
    assert early and not_the_chain_rules(G)
    ruled = [c.rule for c in step_captions(G) if "this engine ran it before" in c.rule]
    assert len(ruled) == len(early)
    assert all("its lines use is not the chain rule's" in rule for rule in ruled)
    right = graph_of_script(script, quiet=True)  # (the Correct engine: in order)
    assert not out_of_order(right) and not not_the_chain_rules(right)


def test_numbers_an_operator_wrapped_are_listed_after_the_scripts_values(tmp_path):
    # (z + 2: the engine wraps the 2 in a Value, whose gradient is as wrong as z's under a
    # wrong tanh, but no student reads it: named once, after the values they wrote)
    script = tmp_path / "wrapped.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ENGINES)!r})\n"
                      "from students import WrongTanh as Value\n"
                      "x, w = Value(0.5), Value(-1.5)\nz = x * w\nL = (z + 2).tanh()\n"
                      "L.backward()\n")
    done = check(script, cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    listed = [line.split()[0] for line in lines if line.startswith("  ") and " got " in line
              and not line.startswith("  and ")]
    assert "2" not in listed and {"x", "w", "z"} <= set(listed)
    wrapped = [line for line in lines if line.startswith("  and the numbers the script wrote")]
    assert len(wrapped) == 1
    assert re.search(r"wrapped by its operators: 2 \(got [^,]+, expected [^)]+\)$", wrapped[0])
