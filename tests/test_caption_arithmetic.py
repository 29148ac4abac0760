"""Every caption's arithmetic, read back from its text and redone here: true at the precision shown.

The checker below knows nothing of how captions are made. It reads a worked
line as a reader does: it splits it at " = ", keeps the parts that are only
numbers (``(−1.5) · 0.4988``, ``[0; 2] · [1; 2]ᵀ``, ``2 · [−2] ⊙ [0.5]``,
``[−4; 2] ⊙ [0; 1]``), works each out in interval arithmetic (a number shown with
4 significant digits stands for everything that rounds to it) and asks that
neighbouring parts can be equal. A note in words at the end, ``(overwrote 1 —
…)``, is no arithmetic and is left out; a part with names in it is symbolic.
"""

from __future__ import annotations

import itertools
import math
import re
import runpy
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from backpropviz import Value
from backpropviz.captions import step_captions
from backpropviz.forward_lines import forward_lines
from backpropviz.html import page_data
from backpropviz.ir import to_networkx
from backpropviz.script import graph_of_script
from backpropviz.step_bands import step_bands
from backpropviz.views import drawn_graph

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ROOT / "tests" / "engines"
TORCH_SCRIPTS = ROOT / "tests" / "torch_scripts"


# ---------------------------------------------------------------- the checker


@dataclass
class Interval:
    """An array of numbers known to within ``rad`` of ``mid`` (entry by entry)."""

    mid: np.ndarray
    rad: np.ndarray

    @staticmethod
    def exact(x: float) -> Interval:
        return Interval(np.asarray(x, dtype=float), np.zeros(()))

    @property
    def matrix(self) -> bool:
        return self.mid.ndim == 2

    def __add__(self, other: Interval) -> Interval:
        return Interval(self.mid + other.mid, self.rad + other.rad)

    def __neg__(self) -> Interval:
        return Interval(-self.mid, self.rad)

    def times(self, other: Interval) -> Interval:
        a, b, ra, rb = self.mid, other.mid, self.rad, other.rad
        return Interval(a * b, np.abs(a) * rb + ra * np.abs(b) + ra * rb)

    def matmul(self, other: Interval) -> Interval:
        a, b = self.mid, other.mid
        ra, rb = np.broadcast_to(self.rad, a.shape), np.broadcast_to(other.rad, b.shape)
        return Interval(a @ b, np.abs(a) @ rb + ra @ np.abs(b) + ra @ rb)

    def divided(self, other: Interval) -> Interval:
        low = np.abs(other.mid) - other.rad
        assert np.all(low > 0), "a division by a number that may be 0"
        quotient = self.mid / other.mid
        return Interval(quotient, (self.rad + np.abs(quotient) * other.rad) / low)

    def apply(self, f) -> Interval:
        """A function monotone on each side of the interval (a power, ln)."""
        centre = f(self.mid)
        spread = np.maximum(np.abs(f(self.mid - self.rad) - centre),
                            np.abs(f(self.mid + self.rad) - centre))
        return Interval(centre, spread)

    def transposed(self) -> Interval:
        return Interval(self.mid.T, np.broadcast_to(self.rad, self.mid.shape).T)


_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:e[−+-]?\d+)?|nan|inf")
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻·", "0123456789-.")
_POWER = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+[⁰¹²³⁴⁵⁶⁷⁸⁹·]*")  # ² or ⁻⁰·⁵ (its point a raised dot)
_TOKEN = re.compile(r"\s*(" + _NUMBER.pattern + r"|ln|" + _POWER.pattern +
                    r"|[\[\];,()·⊙/+−^>ᵀ‖])")


def shown(text: str, precision: int | None) -> Interval:
    """A number as written with ``precision`` significant digits: all that rounds to it;
    with None, the number itself (as a calculator reads it)."""
    x = float(text.replace("−", "-"))
    if x == 0 or not math.isfinite(x) or precision is None:
        return Interval.exact(x)
    last = math.floor(math.log10(abs(x))) - precision + 1
    return Interval(np.asarray(x), np.asarray(0.5 * 10.0 ** last * (1 + 1e-9)))


class Arithmetic:
    """A recursive-descent reader of one numeric expression, worked out as it is read."""

    def __init__(self, text: str, precision: int) -> None:
        self.tokens, self.precision = [], precision
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None:
                if text[position:].strip() == "":
                    break
                raise ValueError(f"cannot read {text[position:]!r} in {text!r}")
            self.tokens.append(match.group(1))
            position = match.end()
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise ValueError(f"expected {expected!r}, found {token!r} in {self.tokens}")
        self.at += 1
        return token

    def value(self) -> Interval:
        result = self.sum()
        if self.peek() is not None:
            raise ValueError(f"left over: {self.tokens[self.at:]}")
        return result

    def sum(self) -> Interval:
        result = self.product()
        while self.peek() in ("+", "−"):
            sign = self.take()
            term = self.product()
            result = result + (term if sign == "+" else -term)
        return result

    def product(self) -> Interval:
        result = self.signed()
        while self.peek() in ("·", "⊙", "/"):
            sign = self.take()
            factor = self.signed()
            if sign == "/":
                result = result.divided(factor)
            elif sign == "·" and result.matrix and factor.matrix:
                result = result.matmul(factor)  # two tables: the matrix product
            else:
                result = result.times(factor)
        return result

    def signed(self) -> Interval:
        if self.peek() == "−":
            self.take()
            return -self.signed()
        if self.peek() == "ln":
            self.take()
            return self.signed().apply(np.log)
        return self.postfix()

    def postfix(self) -> Interval:
        result = self.atom()
        while True:
            token = self.peek()
            if token == "ᵀ":
                self.take()
                result = result.transposed()
            elif token == "^":
                self.take()
                exponent = self.atom()
                result = result.apply(lambda x, n=float(exponent.mid): x ** n)
            elif token is not None and _POWER.fullmatch(token):
                self.take()
                n = float(token.translate(_SUPERSCRIPTS))
                result = result.apply(lambda x, n=n: x ** n)
            else:
                return result

    def atom(self) -> Interval:
        token = self.take()
        if token == "(":
            inner = self.sum()
            self.take(")")
            return inner
        if token == "[":
            return self.table()
        if token == "‖":  # ‖X‖, the Euclidean norm: within ‖rad‖ of ‖mid‖
            inner = self.sum()
            self.take("‖")
            rad = np.broadcast_to(inner.rad, inner.mid.shape)
            return Interval(np.asarray(np.sqrt(np.sum(inner.mid ** 2))),
                            np.asarray(np.sqrt(np.sum(rad ** 2))))
        if _NUMBER.fullmatch(token):
            return shown(token, self.precision)
        raise ValueError(f"unexpected {token!r} in {self.tokens}")

    def table(self) -> Interval:
        """``[a, b; c, d]``: rows by ";", entries by ","; a column ``[a; b]`` is n × 1."""
        rows: list[list[Interval]] = [[]]
        while True:
            rows[-1].append(self.signed())
            token = self.take()
            if token == "]":
                break
            if token == ";":
                rows.append([])
            elif token != ",":
                raise ValueError(f"unexpected {token!r} in a table")
        if len({len(row) for row in rows}) != 1:
            raise ValueError("a table with rows of different lengths")
        mid = np.array([[entry.mid for entry in row] for row in rows], dtype=float)
        rad = np.array([[np.broadcast_to(entry.rad, ()) for entry in row] for row in rows],
                       dtype=float)
        return Interval(mid, rad)


_NOTE = re.compile(r"\s\((?=[a-z])[^()]*\)$")  # "(overwrote 1 — …)", "(but the engine …)"
_WORDS = re.compile(r"[A-Za-zα-ωΑ-Ω_∂…]")


def numeric(part: str) -> bool:
    """Whether a part of a line is numbers only (``ln`` and ``e−05`` allowed)."""
    rest = re.sub(r"\bln\b|(?<=\d)e[−+-]?(?=\d)|\bnan\b|\binf\b", "", part)
    return not _WORDS.search(rest)


def false_arithmetic(line: str, precision: int = 4) -> str | None:
    """Why the arithmetic in ``line`` is false as written, or None if it is true.

    Between numbers, ``=`` must hold for the numbers as written, worked out as a
    calculator does (to a part in 10⁹); ``≈`` at the precision shown: each number
    stands for all that rounds to it."""
    line = _NOTE.sub("", line.strip())
    parts = re.split(r" ([=≈]) ", line)
    values = []
    for part in parts[::2]:
        if " += " in part or not numeric(part):
            values.append(None)
            continue
        try:
            values.append((Arithmetic(part, precision).value(),
                           Arithmetic(part, None).value()))
        except (ValueError, AssertionError) as error:
            return f"cannot work out {part!r}: {error}"
    for sign, (left, right) in zip(parts[1::2], itertools.pairwise(values), strict=True):
        if left is None or right is None:
            continue
        if sign == "=":  # (as written, exactly)
            (_, left), (_, right) = left, right
            scale = max(float(np.nanmax(np.abs(left.mid), initial=0.0)),
                        float(np.nanmax(np.abs(right.mid), initial=0.0)), 1e-300)
            left = Interval(left.mid, np.asarray(1e-9 * scale))
        else:
            (left, _), (right, _) = left, right
        try:
            shape = np.broadcast_shapes(left.mid.shape, right.mid.shape)
        except ValueError:
            return f"{left.mid.tolist()} and {right.mid.tolist()} have different shapes"
        if left.mid.size > 1 and right.mid.size > 1 and left.mid.shape != right.mid.shape:
            return f"{left.mid.tolist()} and {right.mid.tolist()} have different shapes"
        gap = np.abs(np.broadcast_to(left.mid, shape) - np.broadcast_to(right.mid, shape))
        room = np.broadcast_to(left.rad + right.rad, shape) + 1e-12
        both_nan = np.isnan(np.broadcast_to(left.mid, shape)) & np.isnan(
            np.broadcast_to(right.mid, shape))
        if np.any(~both_nan & ~(gap <= room)):
            return f"{left.mid.tolist()} is not {right.mid.tolist()}"
    return None


# ---------------------------------------------------------------- the checker, checked


@pytest.mark.parametrize("line", [
    "∂e/∂d = c · ∂e/∂e = (−3) · 1 = −3",
    "∂L/∂x = 2 + (−3) = −1",
    "∂L/∂h = x · ∂L/∂(x·h) = 0.5 · 1 = 0.5 (overwrote 1 — gradients at a fork must add: +=)",
    "∂L/∂x = w · ∂L/∂(x·w) = (−1.5) · 0.4988 ≈ −0.7481",  # 1.5 · 0.49875… rounds to 0.7481
    "∂L/∂W1 += ∂L/∂z · xᵀ = [0; 2] · [1; 2]ᵀ = [0, 0; 2, 4]",
    "∂J/∂W2 = 2 W2 ⊙ ∂J/∂(‖W2‖²) = 2 · [2, −1] ⊙ 0.05 = [0.2, −0.1]",
    "∂L/∂z = ∂L/∂h ⊙ 1[z>0] = [−4; 2] ⊙ [0; 1] = [0; 2]",
    "∂L/∂z = (1 − h²) · ∂L/∂h = (1 − 0.04996²) · 0.5 ≈ 0.4988",
    "∂L/∂a = ∂L/∂r · 1 / 64 = 1 · 1 / 64 ≈ 0.01562",
    "∂L/∂b = 2 · 3^(2 − 1) · 1 = 6",
    "∂L/∂a = ln 2 · 8 · 1 ≈ 5.545",
    "‖W‖² = ‖[1, −1; 0, 1]‖² = 3",
])
def test_the_checker_passes_true_lines(line):
    assert false_arithmetic(line) is None


@pytest.mark.parametrize("line", [
    "∂L/∂h += x · ∂L/∂(x·h) = 0.5 · 1 = −0.5",  # the capstone's caption before
    "∂L/∂x = 2 + (−3) = 1",
    "∂L/∂W1 = [0; 2] · [1; 2]ᵀ = [0, 0; 2, 5]",
    "∂L/∂W1 = [0; 2] · [1; 2]ᵀ = [0; 2]",  # a 2 × 2 result written as a column
    "∂L/∂z = [−4; 2] ⊙ [0; 1] = [−4; 2]",
    "∂L/∂x = (−1.5) · 0.4988 ≈ −0.7581",  # a digit off, far outside the rounding
    "∂L/∂x = (−1.2) · 0.6127 = −0.7353",  # rounded, but said to be exact (it is −0.73524)
    "‖W‖² = ‖[1, −1; 0, 2]‖² = 3",
])
def test_the_checker_catches_false_lines(line):
    assert false_arithmetic(line) is not None


# ---------------------------------------------------------------- every view's captions


def _cell_text(cell: ET.Element) -> str:
    """A band cell as it reads: its text, or an array typeset in brackets written back
    as captions write one ([0; 2], [0, 0; 2, 4])."""
    array = cell.find("TABLE")
    if array is None:
        return "".join(cell.itertext())
    return "[" + "; ".join(", ".join("".join(entry.itertext()) for entry in row
                                     if entry.get("SIDES") is None)
                           for row in array.findall("TR")) + "]"


def _band_text(band: str) -> list[str]:
    """A step picture's caption band as its lines read: the broken ones joined again."""
    # (each row of the band is a table of one row of cells: text, typeset names and arrays)
    root = ET.fromstring(band.replace("&#160;", "\xa0"))
    cells = ["".join(_cell_text(cell) for cell in row.find("TD/TABLE/TR"))
             for row in root.findall("TR")]
    lines: list[str] = []
    for cell in (cell.replace("\xa0", " ") for cell in cells):
        if cell.startswith(("    = ", "    ≈ ")) and lines:
            lines[-1] += cell[3:]
        elif cell.startswith("∂") or cell[:1].isdigit() or "=" in cell:
            lines.append(cell)
    return lines


def view_lines(G, precision: int = 4) -> dict[str, list[str]]:
    """The worked lines of every view of ``G``: the step pictures' bands, the page's
    captions, the clip's (its graph is the drawn one, as animate's sweep makes it)."""
    drawn = drawn_graph(G)
    return {
        "steps": [line for band in step_bands(drawn, precision=precision)
                  for line in _band_text(band)],
        "page": [line for state in page_data(drawn, precision=precision)["steps"]
                 for line in state["caption"].splitlines()],
        "clip": [line for caption in step_captions(drawn, precision)
                 for line in caption.worked],
    }


def every_line(G, precision: int = 4) -> dict[str, list[str]]:
    """view_lines, and the clip's forward pass: a line an op."""
    forward = forward_lines(drawn_graph(G), precision)
    return {**view_lines(G, precision), "forward": [line.text for line in forward.values()]}


def _scripts() -> list[tuple[Path, dict[str, str]]]:
    # Every example but memory_growth, a measurement (seconds to run) whose steps are
    # matrices too large to work out in a caption; and the capstone's engine module.
    found = [(path, {}) for path in sorted((ROOT / "examples").rglob("*.py"))
             if path.stem not in ("student_value", "memory_growth")]
    for name in ("graded.py", "neuron.py", "micrograd_readme.py", "twice.py", "difference.py",
                 "ordered.py", "shuffled.py", "from_later.py", "twice_backward.py",
                 "after_update.py", "recursive.py"):
        found.append((ENGINES / name, {}))
    for engine in ("Overwrites", "WrongTanh", "WrongOrder", "NoSeed", "Subtracts", "AddsInMul"):
        found.append((ENGINES / "graded.py", {"ENGINE": engine}))
    found += [(TORCH_SCRIPTS / name, {}) for name in ("sequential.py", "inplace_relu.py",
                                                      "vector_times_matrix.py",
                                                      "means_over_axes.py")]
    return found


SCRIPTS = _scripts()


@pytest.mark.parametrize("script, env", SCRIPTS, ids=[
    f"{path.parent.name}/{path.stem}" + (f"[{env['ENGINE']}]" if env else "")
    for path, env in SCRIPTS])
def test_every_caption_of_every_view_is_true_arithmetic(script, env, monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    G = graph_of_script(script, quiet=True)
    for view, lines in every_line(G).items():
        assert lines or not G.graph.get("backward_order"), view
        false = {line: why for line in lines if (why := false_arithmetic(line))}
        assert false == {}, view
        # A right engine (ours, PyTorch, a correct hand-written one) did what each
        # rule says: no caption of it may say otherwise. (The capstone's and the
        # recursive engine's backward passes are wrong; so are the ENGINEs' but
        # Subtracts'; AddsInMul's forward pass is.)
        engine = env.get("ENGINE", "Subtracts")
        right = engine != "AddsInMul" if view == "forward" else \
            script.name not in ("forked_neuron.py", "recursive.py") and engine == "Subtracts"
        if right:
            assert [line for line in lines if "(overwrote" in line or "(but the" in line
                    or "seed backward() started" in line] == [], view


@pytest.mark.parametrize("script, env", [(ROOT / "examples" / "capstone" / "forked_neuron.py", {}),
                                         (ROOT / "examples" / "d2l_mlp.py", {}),
                                         (ENGINES / "graded.py", {"ENGINE": "WrongTanh"})])
@pytest.mark.parametrize("precision", [2, 6])
def test_captions_are_true_at_any_precision_shown(script, env, precision, monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    G = graph_of_script(script, quiet=True)
    for view, lines in every_line(G, precision).items():
        false = {line: why for line in lines if (why := false_arithmetic(line, precision))}
        assert false == {}, view


# ---------------------------------------------------------------- what a student's rule did


def _capstone_numbers() -> dict[str, float]:
    """The capstone by hand: z = xw + b, h = tanh z, L = h·x + h; the student's × writes
    = where += belongs, so each share it sends replaces what was there."""
    x, w = 0.5, -1.5
    h = math.tanh(x * w + 0.8)
    dz = x * 1.0 * (1 - h ** 2)  # h's gradient: 1 from the +, then overwritten by x · 1
    return {"h": h, "dz": dz, "dx": w * dz}


def test_the_capstones_overwrites_are_said_in_every_view():
    n = _capstone_numbers()
    G = graph_of_script(ROOT / "examples" / "capstone" / "forked_neuron.py", quiet=True)
    overwrote_h = ("∂L/∂h = x · ∂L/∂(x·h) = 0.5 · 1 = 0.5 "
                   "(overwrote 1 — gradients at a fork must add: +=)")
    # (the share the engine sent, −0.7481, is what (−1.5) · 0.4988 is not, to 4 digits:
    # its factor gets one more, worked.digits_for)
    overwrote_x = (f"∂L/∂x = w · ∂L/∂(x·w) = (−1.5) · {n['dz']:.5g} ≈ "
                   f"{n['dx']:.4g} (overwrote {n['h']:.4g} — gradients at a fork must add: +=)"
                   ).replace("-", "−")
    for view, lines in view_lines(G).items():
        assert overwrote_h in lines, view
        assert overwrote_x in lines, view
        assert not any("+=" in line.split(" (")[0] for line in lines), view


def test_the_pages_typesetting_sets_an_engines_note_as_words():
    # The page sets names in italics; the note "(overwrote 1 — gradients at a fork must
    # add: +=)" is words, so its "a" must not be set as a name (an italic variable a).
    G = graph_of_script(ROOT / "examples" / "capstone" / "forked_neuron.py", quiet=True)
    notes = 0
    for step in page_data(G)["steps"]:
        for line, runs in zip(step["caption"].split("\n"), step["typeset"], strict=True):
            if "(overwrote" not in line:
                continue
            notes += 1
            opening = line.index(" (overwrote")
            assert runs[-1] == ("text", line[opening:])
            assert "".join(run[-1] if run[0] != "array" else run[2] for run in runs) == line
            assert ("name", "x") in runs  # the equation before it is still typeset
    assert notes == 2


def test_a_wrong_local_derivative_is_not_given_the_rules_result():
    # WrongTanh sends (1 − t) · g where the rule says (1 − t²) · g; g = 1.5 (h at the fork).
    t = math.tanh(0.5 * -1.5 + 0.8)
    sent = (1 - t) * 1.5
    env = {"ENGINE": "WrongTanh"}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        G = graph_of_script(ENGINES / "graded.py", quiet=True)
    line = next(line for line in step_captions(G)[3].worked if line.startswith("∂L/∂z"))
    assert line == (f"∂L/∂z = (1 − h²) · ∂L/∂h = (1 − {t:.4g}²) · 1.5 (but the engine gave "
                    f"{sent:.4g}: not what this rule gives)")


def test_a_right_engine_has_no_note():
    G = graph_of_script(ENGINES / "graded.py", quiet=True)
    lines = [line for caption in step_captions(G) for line in caption.worked]
    assert not any("(" + word in line for line in lines for word in ("overwrote", "but"))
    assert "∂L/∂h = 1 + 0.5 = 1.5" in lines  # 1 from the +, 0.5 = x · 1 from the ×


@pytest.mark.parametrize("engine", ["Overwrites", "WrongTanh", "WrongOrder", "NoSeed"])
def test_the_check_reports_pictures_have_true_captions(engine, monkeypatch):
    from backpropviz.check import check_script

    monkeypatch.setenv("ENGINE", engine)
    report = check_script(ENGINES / "graded.py")
    assert not report.ok
    for view, lines in view_lines(report.graph).items():
        assert lines, view
        false = {line: why for line in lines if (why := false_arithmetic(line))}
        assert false == {}, view


@pytest.mark.parametrize("held, said", [
    (6.0, "∂c/∂b = b · ∂c/∂c = 6 · 1 = 6 (overwrote 6 — gradients at a fork must add: +=)"),
    (13.0, "∂c/∂b is now 13 in the engine, not the sum of 6 and 6"),
])
def test_a_running_sum_that_is_not_the_sum_is_said(example, held, said):
    # fork.py: c = b · b with b = 6, so each edge of b sends 6 · 1 and b's gradient
    # is 6 + 6 = 12. An engine that held 6 after the second (it overwrote), or 13
    # (it added something else), is told as it was.
    G = example("fork")
    mul = G.graph["backward_order"][0]
    second = max(((u, v, k) for u, v, k in G.in_edges(mul, keys=True)),
                 key=lambda edge: G.edges[edge]["arg"])
    G.edges[second]["running"] = held
    lines = step_captions(G)[1].worked
    assert said in lines
    assert "∂c/∂b = 6 + 6 = 12" not in lines
    assert all(false_arithmetic(line) is None for line in lines)


def test_a_line_says_equals_only_where_its_numbers_as_written_give_it(example):
    """The book's numbers are exact as written: every line says =. A neuron's are not:
    a product of rounded numbers says ≈ (with = it would be false to a calculator),
    while the share that + passes on unchanged still says =."""
    lines = [line for caption in step_captions(example("d2l_mlp")) for line in caption.worked]
    assert lines and not [line for line in lines if "≈" in line]
    x, w, b = Value(0.8, label="x"), Value(-1.2, label="w"), Value(0.3, label="b")
    y = (x * w + b).tanh()
    y.label = "y"
    y.backward()
    lines = [line for caption in step_captions(to_networkx(y)) for line in caption.worked]
    rounded = [line for line in lines if "≈" in line]
    assert rounded and all(false_arithmetic(line) is None for line in lines)
    for line in rounded:  # said with =, each would be false as written
        assert false_arithmetic(line.replace(" ≈ ", " = ")) is not None, line
    (passed_on,) = [line for line in lines if line.startswith("∂y/∂b")]
    assert "≈" not in passed_on and passed_on.endswith(f"= {b.grad:.4g}")


@pytest.mark.parametrize("pre", [2.65, -3.1, 0.4])
def test_a_rounded_product_worked_out_as_written_gives_its_result_as_written(pre):
    """A student redoing (1 − t²) · g from the numbers written must get the result
    written: t near 1 cancels (1 − 0.9901² is 0.01970, not the engine's 0.01977), so
    the numbers are written with as many more digits (up to three) as that takes."""
    from backpropviz.formatting import display_number

    x, w, b = Value(1.0, label="x"), Value(pre, label="w"), Value(0.0, label="b")
    y = (x * w + b).tanh() * 4.3066
    y.label = "y"
    y.backward()
    lines = [line for caption in step_captions(to_networkx(y)) for line in caption.worked]
    products = [line for line in lines if " ≈ " in line and "·" in line.split(" = ")[-1]]
    assert products
    for line in products:
        assert false_arithmetic(line) is None, line
        product, result = line.split(" = ")[-1].split(" ≈ ")
        worked = Arithmetic(product, None).value().mid
        digits = len(result.lstrip("−").replace(".", "").lstrip("0"))
        assert display_number(float(worked), digits) == result, (line, float(worked))


def test_a_forks_sum_worked_out_as_written_gives_its_sum_as_written():
    """micrograd's neuron with x₁ used twice (x₁·w₁ and x₁·0.5): a student adding the two
    shares as written must get the sum written. −0.2661 + 0.04436 is −0.22174, not the
    engine's −0.2218, so the terms are written with as many more digits as that takes."""
    from backpropviz.formatting import display_number

    x1, x2 = Value(2.0, label="x1"), Value(0.0, label="x2")
    w1, w2 = Value(-3.0, label="w1"), Value(1.0, label="w2")
    b = Value(6.8813735870195432, label="b")
    o = (x1 * w1 + x2 * w2 + b + x1 * 0.5).tanh()
    o.label = "o"
    o.backward()
    lines = [line for caption in step_captions(to_networkx(o)) for line in caption.worked]
    sums = [line for line in lines if re.fullmatch(r"∂o/∂x1 = \S+ \+ \S+ [=≈] \S+", line)]
    assert len(sums) == 1
    (line,) = sums
    assert false_arithmetic(line) is None
    terms, result = re.split(r" [=≈] ", line.split(" = ", 1)[1])
    worked = Arithmetic(terms, None).value().mid
    digits = len(result.lstrip("−").replace(".", "").lstrip("0"))
    assert display_number(float(worked), digits) == result, (line, float(worked))
    assert result == display_number(x1.grad, 4)
    # (with four digits each, as the line was, the sum as written is another number)
    values = [float(Arithmetic(term, None).value().mid) for term in terms.split(" + ")]
    four = sum(float(display_number(value, 4).replace("−", "-")) for value in values)
    assert display_number(four, digits) != result


@pytest.mark.parametrize("exponent", [-1, -0.5, 3])
def test_a_powers_lines_write_its_exponent_with_a_minus_sign(exponent):
    """(a + 3) ** -1: "∂o/∂(a + 3) = −1 (a + 3)⁻² · ∂o/∂b", its −1 a minus, not the
    hyphen Python prints (a trial user saw "-1 (a + 3)⁻²"); the line true as written."""
    a = Value(2.0, label="a")
    b = (a + 3) ** exponent
    b.label = "b"
    o = b - 0.25
    o.label = "o"
    o.backward()
    lines = [line for caption in step_captions(to_networkx(o))
             for line in (caption.rule, *caption.worked)]
    (power,) = [line for line in lines if line.startswith("∂o/∂(a + 3) = ")]
    assert "-" not in "".join(lines)
    n = f"{exponent:g}".replace("-", "−")
    assert power.startswith(f"∂o/∂(a + 3) = {n} (a + 3)")
    assert false_arithmetic(power) is None


def test_a_mean_over_some_axes_is_not_said_to_be_off_its_rule():
    # PyTorch's x.mean(1, keepdim=True) and z.mean((2, 3)) reach the IR without their
    # axes: the reference took the mean of every entry, found another gradient, and the
    # page told a student that PyTorch's right one was "not what this rule gives".
    G = graph_of_script(TORCH_SCRIPTS / "means_over_axes.py", quiet=True)
    x = next(node for node, attrs in G.nodes(data=True) if attrs.get("label") == "x")
    namespace = runpy.run_path(str(TORCH_SCRIPTS / "means_over_axes.py"))
    np.testing.assert_allclose(G.nodes[x]["grad"], namespace["x"].grad.numpy(), rtol=1e-6)
    for view, lines in view_lines(G).items():
        assert [line for line in lines if "(but the" in line] == [], view
        (line,) = [line for line in lines if line.startswith("∂loss/∂x = ")]
        assert line.endswith("[0.3333, 0.3333, 0.3333; 0.6667, 0.6667, 0.6667]"), view
        # z's gradient, 1×2×2×2, is read on the picture: no line nests brackets for it
        # ([[[0.125, 0.125; …]; […]]] could be read neither by a student nor as arithmetic)
        assert [line for line in lines if "[[" in line] == [], view
        assert all(false_arithmetic(line) is None for line in lines if "∂loss/∂z" in line), view


def test_a_vector_beside_a_matrix_is_written_as_the_row_it_broadcasts_as(tmp_path):
    # X * w with X a batch (2×3) and w a vector of 3: torch (and numpy) line w up as a row.
    # Written as the column the picture draws it, [0.5; −1; 2] ⊙ [[…]] says an outer
    # product; the worked line writes it as the row it is.
    script = tmp_path / "scaled.py"
    script.write_text("import torch\n"
                      "X = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)\n"
                      "w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
                      "loss = (X * w).sum()\nloss.backward()\n", encoding="utf-8")
    G = graph_of_script(script, quiet=True)
    for view, lines in view_lines(G).items():
        (line,) = [line for line in lines if line.startswith("∂loss/∂X = ")]
        assert "[0.5, −1, 2] ⊙ " in line and false_arithmetic(line) is None, (view, line)
    pooled = graph_of_script(TORCH_SCRIPTS / "means_over_axes.py", quiet=True)
    for view, lines in view_lines(pooled).items():
        (line,) = [line for line in lines if line.startswith("∂loss/∂pooled = ")]
        assert false_arithmetic(line) is None, (view, line)


def test_a_sine_and_a_cosine_are_worked_with_their_derivatives_numbers(tmp_path):
    """PyTorch's sin and cos, which this engine has not, are worked as cos(x) and
    −sin(x) at the recorded input times the gradient (a lecturer's chain rule had
    read ∂v/∂x · 0.495 ≈ 0.03501, the factor never given), with ≈: a cosine of a number
    written exactly is not. The arithmetic is redone here on the numbers shown."""
    script = tmp_path / "trig.py"
    script.write_text("import torch\n"
                      "x = torch.tensor(1.5, requires_grad=True)\n"
                      "y = torch.tensor(-0.5, requires_grad=True)\n"
                      "v = torch.sin(x)\n"
                      "w = torch.cos(y)\n"
                      "f = (x * y + v * w) ** 2\n"
                      "f.backward()\n")
    G = graph_of_script(script, quiet=True)
    worked = [line for caption in step_captions(G) for line in caption.worked]
    sine = re.compile(r"cos\(x\) · ∂f/∂v = cos\((\S+)\) · (\S+) ≈ (\S+)")
    cosine = re.compile(r"−sin\(y\) · ∂f/∂w = −sin\((\S+)\) · (\S+) ≈ (\S+)")
    for pattern, local in ((sine, math.cos), (cosine, lambda t: -math.sin(t))):
        (line,) = [line for line in worked if pattern.search(line)]
        at, upstream, result = (float(n.replace("−", "-").strip("()"))
                                for n in pattern.search(line).groups())
        assert local(at) * upstream == pytest.approx(result, rel=2e-3), line
    rules = " ".join(caption.rule for caption in step_captions(G))
    assert "sin multiplies the gradient by the cosine of its input" in rules
    assert "cos multiplies the gradient by minus the sine of its input" in rules


def test_a_linear_layers_step_is_worked_in_its_numbers(tmp_path):
    """nn.Linear, on a batch and on one input: its step works each gradient in the
    numbers recorded (G · W for the input, Gᵀ · X for W, Σ₀ G for b on a batch), not as
    ∂y/∂W · G with the factor never given; the lines are true arithmetic, and the
    results are torch's .grad (the lecturer's and the video maker's MLPs)."""
    batch = tmp_path / "mlp.py"
    batch.write_text(
        "import torch\nimport torch.nn as nn\n"
        "X = torch.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, -1.0]])\n"
        "y = torch.tensor([[1.0], [-1.0]])\n"
        "model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))\n"
        "with torch.no_grad():\n"
        "    model[0].weight.copy_(torch.tensor([[0.5, -0.3, 0.2], [-0.4, 0.1, 0.6]]))\n"
        "    model[0].bias.copy_(torch.tensor([0.1, -0.2]))\n"
        "    model[2].weight.copy_(torch.tensor([[1.5, -0.7]]))\n"
        "    model[2].bias.copy_(torch.tensor([0.05]))\n"
        "loss = nn.functional.mse_loss(model(X), y)\n"
        "loss.backward()\n")
    one = tmp_path / "one.py"
    one.write_text(
        "import torch\n"
        "x = torch.tensor([1.0, -2.0], requires_grad=True)\n"
        "W = torch.tensor([[0.5, -0.25], [2.0, 1.0]], requires_grad=True)\n"
        "loss = (torch.nn.functional.linear(x, W) * torch.tensor([1.0, 2.0])).sum()\n"
        "loss.backward()\n")
    for script, parameters in ((batch, ("model.0.weight", "model.0.bias", "model.2.weight")),
                               (one, ("x", "W"))):
        namespace = runpy.run_path(str(script))
        G = graph_of_script(script, quiet=True)
        steps = [caption for caption in step_captions(G) if "linear layer" in caption.rule]
        assert steps
        lines = {line.split(" ")[0]: line for caption in steps for line in caption.worked}
        for line in lines.values():
            # (every derivative named is of the loss: no ∂y/∂W standing for a factor)
            assert set(re.findall(r"∂([^∂/ ]+)/∂", line)) == {"loss"}, line
            assert false_arithmetic(line) is None, line
        for name in parameters:
            line = lines[f"∂loss/∂{name}"]
            written = re.split(r" [=≈] ", line)[-1]
            rows = [[float(n.replace("−", "-")) for n in row.split(",")]
                    for row in written.strip(" []").split(";")]
            owner, _, attribute = name.rpartition(".")
            grad = (getattr(namespace["model"][int(owner.split(".")[1])], attribute) if owner
                    else namespace[name]).grad.numpy()
            assert np.allclose(np.reshape(rows, grad.shape), grad, rtol=1e-3, atol=1e-6), line
