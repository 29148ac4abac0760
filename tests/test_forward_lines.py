"""The forward pass told a line an op (forward_lines), in the clip's caption band.

Each line is checked against numbers worked out here (the book's example by hand, a
PyTorch batch by PyTorch itself), read back from the line as a reader reads it; the
arithmetic of every example's lines is checked in test_caption_arithmetic.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from test_animate import dry_run, visible_lines
from test_caption_arithmetic import Arithmetic, false_arithmetic

from backpropviz.animate.story import caption_rows, spaced
from backpropviz.animate.sweep import BackpropScene
from backpropviz.forward_lines import forward_lines
from backpropviz.names import subscripted
from backpropviz.script import graph_of_script
from backpropviz.views import drawn_graph

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ROOT / "tests" / "engines"


def lines_of(script: Path, **env: str) -> list[str]:
    old = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        G = drawn_graph(graph_of_script(script, quiet=True))
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return [line.text for line in forward_lines(G).values()]


def result_of(line: str) -> np.ndarray:
    """The number a line ends with, as written (its last part after = or ≈)."""
    last = line.replace(" ≈ ", " = ").rsplit(" = ", 1)[1]
    return Arithmetic(last, None).value().mid


def test_the_books_forward_pass_is_worked_in_its_numbers():
    # D2L's example by hand: W1 = [1, −1; 0, 1], x = [1; 2], W2 = [2, −1], y = 0.
    W1, x, W2, y = np.array([[1, -1], [0, 1]]), np.array([1, 2]), np.array([[2, -1]]), 0
    z = W1 @ x
    h = np.maximum(z, 0)
    o = W2 @ h
    lines = lines_of(ROOT / "examples" / "d2l_mlp.py")
    assert lines == [
        "z = W1 x = [1, −1; 0, 1] · [1; 2] = [−1; 2]",
        "h = ReLU(z) = ReLU([−1; 2]) = [0; 2]",
        "o = W2 h = [2, −1] · [0; 2] = [−2]",
        "o − y = [−2] − 0 = [−2]",
        "(o − y)² = [−2]² = [4]",
        "Σ(o − y)² = Σ[4] = 4",
        "L = Σ(o − y)² / 2 = 4 / 2 = 2",
    ]
    worked = [z, h, o, o - y, (o - y) ** 2, np.sum((o - y) ** 2), np.sum((o - y) ** 2) / 2]
    for line, number in zip(lines, worked, strict=True):
        assert np.array_equal(result_of(line).ravel(), np.ravel(number)), line


def test_a_torch_batch_is_worked_in_torchs_numbers(tmp_path):
    # A lecture's two-layer network on a batch of two, its weights drawn at random.
    script = tmp_path / "batch.py"
    script.write_text(
        "import torch\nfrom torch import nn\ntorch.manual_seed(3)\n"
        "model = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))\n"
        "X = torch.tensor([[0.5, -1.0], [2.0, 0.25]])\n"
        "y = torch.tensor([[1.0], [0.0]])\n"
        "loss = ((model(X) - y) ** 2).mean()\nloss.backward()\n", encoding="utf-8")
    lines = lines_of(script)
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    X = torch.tensor([[0.5, -1.0], [2.0, 0.25]])
    with torch.no_grad():
        hidden = model[0](X)
        out = model[2](torch.tanh(hidden))
        loss = ((out - torch.tensor([[1.0], [0.0]])) ** 2).mean()
    expected = [hidden, torch.tanh(hidden), out, loss]
    named = ("linear(X)", "tanh(linear(X))", "linear(tanh(linear(X)))", "loss")
    shown = [line for line in lines if line.split(" = ")[0] in named]
    assert len(shown) == len(expected), lines
    # A layer's line puts in its weights and bias too: x · Wᵀ + b, the bias as the row
    # added to each row of the batch.
    W, b = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    numbers = shown[0].split(" ≈ ")[0].split(" = ")[1]
    x_part, rest = numbers.split(" · ")
    w_part, b_part = rest.split("ᵀ + ")
    assert np.allclose(Arithmetic(x_part, None).value().mid, X.numpy())
    assert np.allclose(Arithmetic(w_part, None).value().mid, W, rtol=6e-4)
    assert np.allclose(Arithmetic(b_part, None).value().mid, b[None, :], rtol=6e-4)
    for line, number in zip(shown, expected, strict=True):
        # (4 significant digits: each entry within half a unit of its last digit)
        written = result_of(line).ravel()
        assert np.allclose(written, number.numpy().ravel(), rtol=6e-4, atol=1e-12), line
        assert false_arithmetic(line) is None, line


def test_a_forward_pass_the_engine_got_wrong_is_said_and_shown(tmp_path):
    # A student's __mul__ copied from __add__: x·w is 0.5 + (−1.5) = −1 in the engine.
    lines = lines_of(ENGINES / "graded.py", ENGINE="AddsInMul")
    assert lines[0] == "x·w = 0.5 · (−1.5) (but the engine computed −1: not what × gives)"
    assert lines[1] == "z = x·w + b = −1 + 0.8 = −0.2"  # (the engine's numbers, added right)

    class Watched(BackpropScene):
        def forward_op(self, op):
            super().forward_op(op)
            self.__dict__.setdefault("seen", []).append(visible_lines(self.caption))

    script = tmp_path / "student.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ENGINES)!r})\nimport students\n"
                      "Value = students.AddsInMul\nx = Value(0.5, label='x')\n"
                      "w = Value(-1.5, label='w')\ny = x * w\ny.backward()\n", encoding="utf-8")
    scene = dry_run(graph_of_script(script, quiet=True), Watched)
    (line,) = lines_of(script)
    # On screen when the op is done: its whole line, every term shown; and it is its cue.
    assert scene.seen == [[line.replace(" ", "")]]
    assert line in [text for _, text in scene.cues]


@pytest.mark.parametrize("inputs, said", [
    (12, None),  # (its line, numbers and all, in the band's rows)
    (40, "n = −4.78"),  # (in names alone it would still take 7 rows of 6: its result)
])
def test_a_line_wider_than_the_band_is_set_in_the_bands_rows(tmp_path, inputs, said):
    # (a band of 6 rows, as the clip of the sum of 40 sets it for its backward captions;
    # the band a whole clip sets is checked below)
    # A neuron's inputs summed in one line, as a list comprehension in a lecture does.
    script = tmp_path / "wide.py"
    script.write_text(
        "from backpropviz import Value\n"
        f"xs = [Value(0.03 * i - 0.55, label=f'x{{i}}') for i in range({inputs})]\n"
        f"ws = [Value(0.731 - 0.031 * i, label=f'w{{i}}') for i in range({inputs})]\n"
        "n = sum((w * x for w, x in zip(ws, xs)), Value(0.0, label='b'))\n"
        "L = n.tanh()\nL.backward()\n", encoding="utf-8")
    scene = SimpleNamespace(graph=drawn_graph(graph_of_script(script, quiet=True)),
                            precision=4)
    captions = BackpropScene.forward_lines_within(scene, 6)
    assert max(caption_rows("", lines) for lines in captions.values()) <= 6
    shown = [spaced([term.text for term in terms]) for lines in captions.values()
             for _, terms in lines]
    (full,) = [line for line in lines_of(script) if line.startswith("n = ")]
    (shown,) = [line for line in shown if line.startswith("n = ")]
    xs = [0.03 * i - 0.55 for i in range(inputs)]
    n = sum((0.731 - 0.031 * i) * x for i, x in enumerate(xs))
    assert abs(result_of(full) - n) <= 5e-4 * abs(n)
    assert shown == (subscripted(full) if said is None else said)


def test_a_result_written_whole_with_a_digit_more_is_not_said_to_be_rounded(tmp_path):
    script = tmp_path / "cube.py"
    script.write_text("from backpropviz import Value\na = Value(3.0, label='a')\n"
                      "f = Value(1.5, label='e') ** 3\ng = f * a\ng.backward()\n",
                      encoding="utf-8")
    # 1.5³ = 3.375 and 3.375 · 3 = 10.125, exactly: not "≈ 10.12" (a reader rounds up)
    assert lines_of(script)[-1].endswith(" = 3.375 · 3 = 10.125")


def test_the_forward_pass_is_told_in_the_order_the_script_computed_it(tmp_path):
    # d is computed before b⁻¹, though b⁻¹ is nearer the inputs (a sort of the graph
    # alone tells b⁻¹ first); the clip tells d first, as the script reads, and every op
    # after its operands.
    script = tmp_path / "order.py"
    script.write_text("from backpropviz import Value\na, b = Value(3.0, label='a'), "
                      "Value(-2.0, label='b')\nc = a * b\nd = a + c\ne = d * b ** -1\n"
                      "e.backward()\n", encoding="utf-8")
    scene = dry_run(graph_of_script(script, quiet=True))
    told = [text.split(" = ")[0] for _, text in scene.cues if " = " in text][1:]
    assert told[:4] == ["c", "d", "b⁻¹", "e"], told


def test_a_forward_line_is_held_whole_until_it_can_be_read():
    from backpropviz.animate import pacing

    class Timed(BackpropScene):
        def forward_op(self, op):
            self.__dict__["landed"] = None
            super().forward_op(op)
            self.__dict__.setdefault("held", []).append((self.caption_text, self.landed,
                                                         self.time))

        def hold(self, start):
            if self.__dict__.get("landed", 0) is None:  # (the first hold of a forward op)
                self.landed = self.time
            super().hold(start)

    scene = dry_run(graph_of_script(ROOT / "examples" / "d2l_mlp_scalar.py", quiet=True), Timed)
    assert len(scene.held) == 14
    for text, landed, end in scene.held:
        # (from the moment its result lands, its last term, to the next op's)
        assert end - landed >= pacing.reading_time(text) - 1e-3, text


def test_a_result_too_large_to_write_is_said_by_its_shape(tmp_path):
    script = tmp_path / "big.py"
    script.write_text("import torch\ntorch.manual_seed(0)\n"
                      "X = torch.randn(8, 4)\nW = torch.randn(4, 5, requires_grad=True)\n"
                      "H = torch.relu(X @ W)\nloss = H.sum()\nloss.backward()\n",
                      encoding="utf-8")
    lines = lines_of(script)
    assert "H = ReLU(X W), 8 × 5" in lines
    assert any(line.startswith("loss = ΣH = ") for line in lines)


@pytest.mark.parametrize("example", ["d2l_mlp", "mlp3", "capstone/forked_neuron"])
def test_the_clip_tells_each_op_of_the_forward_pass_once_in_order(example):
    G = graph_of_script(ROOT / "examples" / f"{example}.py", quiet=True)
    scene = dry_run(G)
    assert max(caption_rows("", lines) for lines in scene.forward_captions.values()) \
        <= scene.caption_rows
    cues = [text for _, text in scene.cues]
    header = cues.index("Forward pass: compute and store each value")
    lines = forward_lines(scene.graph)
    # In the order the pass computed them, each as the screen writes names (W₁).
    told = [subscripted(lines[op].text) for op in scene.forward_order()]
    assert cues[header + 1:header + 1 + len(told)] == told
    assert cues[header + 1 + len(told)].startswith("backward starts")
    assert all(false_arithmetic(cue) is None for cue in told)
