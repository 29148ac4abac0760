"""Practice mode: the page asks for every gradient of the backward pass, checks the
answer against the engine's number as drawn, hints with the rule, and scores."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import backpropviz
from backpropviz.errors import UsageError
from backpropviz.html import render_html, to_html
from backpropviz.options import Options
from backpropviz.practice import practice_questions
from backpropviz.script import graph_of_script
from tests.in_process import run_cli
from tests.test_caption_arithmetic import false_arithmetic, numeric
from tests.test_html import EXAMPLES, read_state

# A script a lecturer would bring: one neuron, the chain rule through tanh.
NEURON = """\
from backpropviz import Value

x = Value(2.0, label="x")
w = Value(-3.0, label="w")
b = Value(6.8813735870195432, label="b")
n = x * w + b
n.label = "n"
o = n.tanh()
o.label = "o"
o.backward()
"""


def _numbers(cells) -> np.ndarray:
    return np.array([[float(cell.replace("−", "-")) for cell in row] for row in cells])


def _torch_mlp() -> dict[str, np.ndarray]:
    """The book's MLP in plain PyTorch: every value's gradient, by the page's names."""
    torch = pytest.importorskip("torch")
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    W1 = torch.tensor([[1.0, -1.0], [0.0, 1.0]], dtype=torch.float64, requires_grad=True)
    W2 = torch.tensor([[2.0, -1.0]], dtype=torch.float64, requires_grad=True)
    z = W1 @ x
    h = torch.relu(z)
    o = W2 @ h
    d = o - 0
    square = d ** 2
    total = square.sum()
    for t in (z, h, o, d, square, total):
        t.retain_grad()
    (total / 2).backward()
    named = {"x": x, "W1": W1, "W2": W2, "z": z, "h": h, "o": o, "o − y": d,
             "(o − y)²": square, "Σ(o − y)²": total}
    return {name: t.grad.detach().numpy() for name, t in named.items()}


def _asked(prompt: str) -> str:
    """The value a prompt asks about, by the script's name: ``∂L/∂(o − y) =`` -> ``o − y``,
    ``∂L/∂W₁ =`` (written as the figure sets it) -> ``W1``."""
    name = re.search(r"∂\w+/∂(.+?) \+?=", prompt).group(1)
    name = name.translate(str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789"))
    return name[1:-1] if name.startswith("(") and name.endswith(")") else name


def test_the_expected_answers_are_pytorchs_gradients(example):
    reference = _torch_mlp()
    asked = [q for step in practice_questions(example("d2l_mlp")) for q in step]
    numbers = [q for q in asked if q["kind"] == "number"]
    assert {_asked(q["prompt"]) for q in numbers} == set(reference)
    for q in numbers:
        want = reference[_asked(q["prompt"])]
        got = _numbers(q["expect"])
        assert np.allclose(got.ravel(), want.ravel(), atol=1e-12), q["prompt"]
        assert got.shape == (want.shape if want.ndim == 2 else (want.size, 1)) or want.ndim == 0
    # The dead ReLU asks why, once, after ∂L/∂z.
    choices = [q for q in asked if q["kind"] == "choice"]
    assert [q["prompt"] for q in choices] == ["Why is ∂L/∂z zero where it is?"]
    assert "≤ 0" in choices[0]["choices"][choices[0]["answer"]]


def test_a_fork_asks_each_share_then_the_sum(example):
    # c = b·b with b = a + a, a = 3: each share of b is b = 6, then 12; of a 12, then 24.
    steps = practice_questions(example("fork"))
    assert [[(q["prompt"], _numbers(q["expect"]).item()) for q in step] for step in steps] == [
        [], [("∂c/∂b =", 6), ("∂c/∂b +=", 6), ("the sum: ∂c/∂b =", 12)],
        [("∂c/∂a =", 12), ("∂c/∂a +=", 12), ("the sum: ∂c/∂a =", 24)]]


def test_hints_name_the_rule_and_are_true_arithmetic_once_answered(example, tmp_path):
    script = tmp_path / "neuron.py"
    script.write_text(NEURON)
    graphs = [graph_of_script(script, (), quiet=True)] + [
        example(name) for name in ("d2l_mlp", "fork", "add_mul", "d2l_objective")]
    checked = 0
    for G in graphs:
        for q in (q for step in practice_questions(G) for q in step if q["kind"] == "number"):
            assert q["hint"].startswith(q["rule"] + ": ")
            assert q["hint"].endswith((" = ?", " ≈ ?"))  # (≈: the answer is rounded)
            line = q["hint"][len(q["rule"]) + 2:]
            answer = re.split(" [=≈] ", q["worked"])[-1]
            assert false_arithmetic(line.replace("?", answer)) is None, line
            parts = re.split(" [=≈] ", line)
            if len(parts) > 2 and numeric(parts[-2]) and np.size(q["expect"]) == 1:
                # the numbers are put in: a wrong answer would make the line false
                wrong = f"{_numbers(q['expect']).item() + 7:g}"
                assert false_arithmetic(line.replace("?", wrong)) is not None
            checked += 1
    assert checked > 30


def test_practice_is_an_option_of_the_page_only():
    with pytest.raises(UsageError, match=r"--practice.*for \.html only, not svg"):
        Options(practice=True).check("svg")
    with pytest.raises(UsageError, match="--steps"):
        Options(practice=True).check("html", steps=True)
    Options(practice=True).check("html")
    assert Options(practice=True).page()["practice"] is True


# ---------------------------------------------------------------- in a browser

STEP = "() => Number(document.getElementById('bpv').dataset.step)"
READY = """() => (!document.getElementById('practice-form').hidden &&
  document.activeElement && document.activeElement.closest('#practice')) ||
  !document.getElementById('practice-score').hidden"""


# The page holds a finished step drawn whole for PRACTICE_PAUSE ms before it asks the
# next; the tests' clock passes that at once rather than wait it out.
PAUSE_MS = int(re.search(r"PRACTICE_PAUSE = (\d+);", (Path(backpropviz.__file__).parent
                                                     / "html_page.js").read_text())[1])


def open_practice(browser, path, width=1280, height=720):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.clock.install()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    return page, errors


def wait_for(page, condition: str) -> None:
    """Wait until ``condition`` holds, the page's pause between steps passed first."""
    page.clock.run_for(PAUSE_MS)
    page.wait_for_function(condition)


def prompt(page) -> str:
    wait_for(page, READY)
    return page.text_content("#practice-prompt")


def type_answer(page, text: str) -> None:
    """Types into the field that has the focus, and Enter: the keyboard only."""
    wait_for(page, READY)
    assert page.evaluate("() => document.activeElement.id") == "answer"
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def _typed(x: np.ndarray) -> str:
    """How a student writes a number or array (ASCII minus, a few digits)."""
    if x.ndim == 0 or x.size == 1:
        return f"{x.item():.4g}"
    if x.ndim == 1:
        return "[" + "; ".join(f"{v:.4g}" for v in x) + "]"
    return "[" + ", ".join("[" + ", ".join(f"{v:.4g}" for v in row) + "]" for row in x) + "]"


def test_the_mlp_answered_right_from_the_keyboard(example, browser, tmp_path):
    G = example("d2l_mlp")
    reference = _torch_mlp()
    path = render_html(G, tmp_path / "practice.html", practice=True)
    page, errors = open_practice(browser, path)
    assert page.evaluate(STEP) == 1
    # Hidden: the caption's numbers and the gradient ∂L/∂(Σ(o − y)²) of step 1.
    state = read_state(page)
    assert set(state["grads"]) == {"v11"} and state["caption"] == ""
    page.hover("g#v9")  # nor does hovering give it away
    assert page.locator("#tooltip .none").text_content() == "not computed yet"
    assert page.evaluate("() => document.activeElement.id") == "answer"
    # The page's keys do not fire while typing: ← stays in the field.
    page.keyboard.type("0.5")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("End")
    assert page.evaluate(STEP) == 1
    page.keyboard.press("Enter")
    wait_for(page, READY)
    assert "v9" in read_state(page)["grads"]  # the answer appears in its slot
    seen = ["∂L/∂(Σ(o − y)²) ="]
    while True:
        asked = prompt(page)
        if not page.locator("#practice-score").is_hidden():
            break
        if asked.startswith("Why"):
            page.keyboard.press("Enter")  # the first choice, which has the focus
            continue
        seen.append(asked[:-2])
        type_answer(page, _typed(reference[_asked(asked)]))
    assert seen == ["∂L/∂(Σ(o − y)²) =", "∂L/∂((o − y)²) =", "∂L/∂(o − y) =", "∂L/∂o =",
                    "∂L/∂W₂ =", "∂L/∂h =", "∂L/∂z =", "∂L/∂W₁ =", "∂L/∂x ="]
    # At the end: every gradient drawn, as on the plain page's last step.
    assert page.evaluate(STEP) == len(G.graph["backward_order"])
    assert _numbers([read_state(page)["grads"]["v1"]]).ravel().tolist() == \
        reference["W1"].ravel().tolist()
    assert page.text_content("#practice-score") == (
        "Done: 10 of 10 right at the first try, 0 after a hint, 0 shown. Every rule right.")
    assert errors == []
    page.close()


def test_an_answer_worked_from_the_numbers_shown_is_right(browser, tmp_path):
    """A number worked from the page's own numbers, rounded as drawn, may differ from
    the drawn result in its last digit (a trial student's −0.2646 + 0.1487 = −0.1159,
    drawn −0.1158, was marked wrong): within three units of that digit it is right;
    farther off it is not."""
    script = tmp_path / "neuron.py"
    script.write_text(NEURON)
    G = graph_of_script(script, (), quiet=True)
    path = render_html(G, tmp_path / "neuron.html", practice=True)
    page, errors = open_practice(browser, path)
    assert prompt(page) == "∂o/∂n = ?"  # (drawn 0.5)
    type_answer(page, "0.501")
    assert page.text_content("#practice-feedback").startswith("Not quite")
    assert prompt(page) == "∂o/∂n = ?"
    type_answer(page, "0.5002")
    assert prompt(page) != "∂o/∂n = ?"
    assert errors == []
    page.close()


def test_a_wrong_answer_gets_the_rule_then_the_worked_line(browser, tmp_path):
    script = tmp_path / "neuron.py"
    script.write_text(NEURON)
    G = graph_of_script(script, (), quiet=True)
    path = render_html(G, tmp_path / "neuron.html", practice=True)
    page, errors = open_practice(browser, path)
    assert prompt(page) == "∂o/∂n = ?"
    o = math.tanh(2 * -3 + 6.8813735870195432)  # 1/√2, the lecture's classic
    type_answer(page, "1")
    hint = page.text_content("#practice-feedback")
    assert hint.startswith("Not quite. Hint: tanh multiplies the gradient by 1 − tanh²: ")
    line = hint.split("tanh²: ", 1)[1]
    assert line == "∂o/∂n = (1 − o²) · ∂o/∂o = (1 − 0.7071²) · 1 ≈ ?"  # (0.5000 rounded)
    assert false_arithmetic(line.replace("?", f"{1 - o * o:.4g}")) is None  # true, once filled
    assert page.evaluate(STEP) == 1
    page.keyboard.press("Control+A")
    type_answer(page, "0.7")
    assert page.text_content("#practice-feedback") == (
        "Not quite. Worked: ∂o/∂n = (1 − o²) · ∂o/∂o = (1 − 0.7071²) · 1 ≈ 0.5")
    page.keyboard.press("Control+A")
    type_answer(page, "0.50")  # trailing zeros are the same number
    assert prompt(page) == "∂o/∂(x·w) = ?"
    type_answer(page, "0.5")
    assert prompt(page) == "∂o/∂b = ?"
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")  # past "check" to "show"
    assert page.evaluate("() => document.activeElement.id") == "reveal"
    page.keyboard.press("Enter")
    assert prompt(page) == "∂o/∂x = ?"
    type_answer(page, "−1.5")  # w · 0.5, with a true minus sign
    type_answer(page, "1")  # x · 0.5
    wait_for(page, "() => !document.getElementById('practice-score').hidden")
    assert page.text_content("#practice-score") == (
        "Done: 3 of 5 right at the first try, 0 after a hint, 2 shown. Rules to review: "
        "tanh multiplies the gradient by 1 − tanh²; addition passes the gradient on unchanged.")
    assert errors == []
    page.close()


def test_the_fork_asks_each_share_then_the_sum(example, browser, tmp_path):
    G = example("fork")
    path = render_html(G, tmp_path / "fork.html", practice=True)
    page, errors = open_practice(browser, path)
    badge = "(id) => document.getElementById(id).classList.contains('contribution')"
    assert prompt(page) == "∂c/∂b = ?"
    assert not page.evaluate(badge, "v1->op1#0")
    type_answer(page, "6")
    assert prompt(page) == "∂c/∂b += ?"
    # The first share is on its edge now, the second not yet, nor the sum in b.
    assert page.evaluate(badge, "v1->op1#0") and not page.evaluate(badge, "v1->op1#1")
    assert "v1" not in read_state(page)["grads"]
    type_answer(page, "6")
    assert prompt(page) == "the sum: ∂c/∂b = ?"
    type_answer(page, "13")
    assert page.text_content("#practice-feedback") == (
        "Not quite. Hint: a value used twice adds up its gradients (+=): ∂c/∂b = 6 + 6 = ?")
    page.keyboard.press("Control+A")
    type_answer(page, "12")
    wait_for(page, f"() => ({STEP})() === 2")
    assert read_state(page)["grads"]["v1"] == ["12"]
    for answer in ("12", "12", "24"):
        type_answer(page, answer)
    wait_for(page, "() => !document.getElementById('practice-score').hidden")
    assert page.text_content("#practice-score").startswith(
        "Done: 5 of 6 right at the first try, 1 after a hint, 0 shown. Rules to review: "
        "a value used twice adds up")
    assert errors == []
    page.close()


def test_a_matrix_answer_in_either_form_and_the_dead_relus_question(example, browser,
                                                                     tmp_path):
    G = example("d2l_mlp")
    path = render_html(G, tmp_path / "mlp.html", practice=True)
    page, errors = open_practice(browser, path)
    page.click("#reveal")
    for _ in range(4):  # the steps before the ReLU, shown
        prompt(page)
        page.click("#reveal")
    assert prompt(page) == "∂L/∂h = ?"
    type_answer(page, "[-4, 2]")  # a vector as a row is the same vector
    assert prompt(page) == "∂L/∂z = ?"
    type_answer(page, "[0, 2, 1]")
    assert page.text_content("#practice-feedback") == "It has 2×1 entries (rows; columns)."
    page.keyboard.press("Control+A")
    type_answer(page, "[0; 2]")
    assert prompt(page) == "Why is ∂L/∂z zero where it is?"
    assert page.evaluate("() => document.activeElement.textContent").startswith("1. its input z")
    assert read_state(page)["grads"].get("v3") is None  # drawn once the why is answered
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # 2. ReLU passes only positive gradients back
    assert "it depends on its input z, not on the sign" in page.text_content("#practice-feedback")
    assert page.evaluate("() => document.activeElement.textContent").startswith("1. ")
    page.keyboard.press("Enter")
    assert prompt(page) == "∂L/∂W₁ = ?"
    state = read_state(page)
    assert state["grads"]["v3"] == ["0", "2"]
    type_answer(page, "[0, 0; 2, 4]")
    type_answer(page, "[[0], [2]]")
    wait_for(page, "() => !document.getElementById('practice-score').hidden")
    assert page.text_content("#practice-score") == (
        "Done: 4 of 10 right at the first try, 1 after a hint, 5 shown. Rules to review: "
        "a / b sends the gradient / b to a, and −gradient · a / b² to b; sum copies the "
        "gradient to every entry; xⁿ sends back n·xⁿ⁻¹ times the gradient; a − b passes the "
        "gradient to a, and minus it to b; a matrix product gives each factor the gradient "
        "times the other, one of the two transposed; a dead unit (input ≤ 0) passes nothing.")
    assert errors == []
    page.close()


def test_a_students_engine_off_the_chain_rule_is_not_practised(tmp_path):
    """The capstone's engine sets gradients with = in __mul__ (h's 1 overwritten by
    0.5). Its page had asked for what that engine held: a trial student's right answer
    by the chain rule was marked "Not quite" under a hint giving the very rule, and the
    score sent the student to review rules the engine broke. Such an engine's page is
    refused in one sentence that names the gradients and sends to check; no file is
    left. A right engine's page is practised as before (the tests above)."""
    done = run_cli("render", EXAMPLES / "capstone" / "forked_neuron.py", "-o", "p.html",
                   "--practice", cwd=tmp_path, text=True)
    assert done.returncode == 1
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith("backpropviz: error: --practice asks for the chain rule's "
                              "gradients, and this engine's backward pass does not give them")
    assert "(the gradients of x, w, b and 3 more differ)" in message
    assert "run backpropviz check on the script" in message
    assert list(tmp_path.iterdir()) == []


def test_the_practice_page_is_one_offline_file(example):
    html = to_html(example("d2l_mlp"), practice=True)
    assert "<script src" not in html and "url(" not in html
    assert html.count('id="answer"') == 1 and '<label for="answer"' in html


def test_every_adapter_makes_the_practice_page(example, tmp_path, capsys):
    from backpropviz.cli import main
    from backpropviz.output import show

    assert main(["render", str(EXAMPLES / "fork.py"), "-o", str(tmp_path / "p.html"),
                 "--practice"]) == 0
    assert 'id="answer"' in (tmp_path / "p.html").read_text(encoding="utf-8")
    assert main(["render", str(EXAMPLES / "fork.py"), "-o", str(tmp_path / "p.svg"),
                 "--practice"]) != 0
    assert "--practice" in capsys.readouterr().err and not (tmp_path / "p.svg").exists()
    page = show(example("fork"), Options(practice=True), format="html")
    assert 'id="answer"' in page.html and "practise" in page.title()
