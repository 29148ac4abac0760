"""One naming layer: every view writes a value's name as the figure sets it (W₁, not W1),
an unnamed leaf and an index read as the script wrote them, a heading cut only for room."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import numpy as np
import pytest

from backpropviz import Tensor, Value, draw
from backpropviz.captions import step_captions
from backpropviz.html import page_data
from backpropviz.ir import to_networkx
from backpropviz.memory import timeline
from backpropviz.memory_chart import step_meter, timeline_html, timeline_svg
from backpropviz.metrics import text_width
from backpropviz.names import heading_room, headings, value_names
from backpropviz.practice import practice_questions
from backpropviz.script import graph_of_script, run_script
from backpropviz.style import EXPRESSION_PT
from tests.in_process import run_cli

# A name written plainly with its index (W1, x2, b1, w1_11, v7): what the figure never shows,
# since it sets the index as a subscript. (Not a number's exponent: 1e-05.)
PLAIN = re.compile(r"(?<![0-9.A-Za-z_])[A-Za-z]+_?[0-9]+(?![0-9A-Za-z_])")
SVG_TEXT = re.compile(r"<(text|title)\b[^>]*>(.*?)</\1>", re.S)
# A run an SVG text sets lowered (the memory chart's subscript): written W_{1} here.
LOWERED = re.compile(r'<tspan[^>]*\bdy="[1-9][^"]*"[^>]*>([^<]*)</tspan>')


def svg_texts(svg: str, tooltips: bool = False) -> list[str]:
    """Every run of text an SVG draws, tags inside removed; with ``tooltips``, its
    titles too (the memory chart's say what each bar holds; graphviz's are node ids)."""
    return [unescape(re.sub(r"<[^>]+>", "", LOWERED.sub(r"_{\1}", body))).replace("\xa0", " ")
            for tag, body in SVG_TEXT.findall(svg) if tooltips or tag == "text"]


def plainly_written(texts) -> list[str]:
    return [text for text in texts if PLAIN.search(text)]


def test_no_view_writes_w1_where_the_figure_sets_w_sub_1(example, tmp_path):
    G = example("d2l_mlp")  # W1, W2: parameters whose names have an index
    # The figure itself: the index is a run of its own, lowered.
    figure = draw(G).pipe("svg").decode()
    assert "W" in svg_texts(figure) and not plainly_written(svg_texts(figure))
    # The step slides: their rule and equations.
    status = run_cli("render", "examples/d2l_mlp.py", "--steps", tmp_path / "steps",
                     cwd=Path(__file__).resolve().parent.parent)
    assert status.returncode == 0, status.stderr
    slides = sorted((tmp_path / "steps").glob("*.svg"))
    assert len(slides) == len(G.graph["backward_order"]) + 1
    for slide in slides:
        assert not plainly_written(svg_texts(slide.read_text())), slide.name
    # The page: every text its script writes into the document.
    data = page_data(G)
    words = [value["name"] for value in data["values"].values()]
    words += [text for state in data["steps"] for text in (state["caption"], state["rule"])]
    assert "W₁" in words and "∂L/∂W₁ = ∂L/∂z · xᵀ" in "\n".join(words)
    assert not plainly_written(words)
    asked = [question for step in practice_questions(G) for question in step]
    assert not plainly_written([question[key] for question in asked
                                for key in ("prompt", "hint", "worked", "rule")])
    assert any(question["prompt"] == "∂L/∂W₁ =" for question in asked)
    # The memory chart: its bars' tooltips, its labels, its table, the page's meter.
    line = timeline(G)
    meter = step_meter(line)
    assert not plainly_written(svg_texts(timeline_svg(line), tooltips=True) + meter["text"]
                               + svg_texts(meter["svg"], tooltips=True))
    table = re.findall(r"<td>(.*?)</td>", timeline_html(line))
    assert table and not plainly_written([unescape(cell) for cell in table])


def test_the_clips_words_write_w_sub_1_as_its_boxes_do(example):
    pytest.importorskip("manim")
    from test_clip_story import story

    G = example("d2l_mlp")
    scene = story(G)
    cues = [text for _, text in scene.cues]
    # The title card, every step's caption and the recap: as the screen shows them.
    assert cues[0].startswith("L = ") and "W₁ and W₂" in cues[0]
    assert any("∂L/∂W₁ = ∂L/∂z · xᵀ" in cue for cue in cues)
    assert cues[-1].startswith("Recap") and "∂L/∂W₂ =" in cues[-1]
    assert not plainly_written(cues)
    # (The recap's formulas are LaTeX, whose W_{1} is typeset; its Unicode fallback too.)
    shown = [part.text for m in scene.mobjects for part in m.get_family()
             if type(part).__name__ == "Text"]
    assert not plainly_written(shown)


def _script(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return path


LEAF = """\
import torch
torch.manual_seed(0)
x1 = torch.tensor([1.0, 2.0, -1.0])
W1 = torch.randn(4, 3, requires_grad=True) * 0.5
b1 = torch.zeros(4, requires_grad=True)
L = (torch.relu(W1 @ x1 + b1) ** 2).sum()
L.backward()
"""


def test_an_unnamed_parameter_is_the_leaf_of_what_the_script_made_of_it(tmp_path):
    pytest.importorskip("torch")
    path = _script(tmp_path, "leaf", LEAF)
    G = graph_of_script(path, quiet=True)
    (leaf,) = [node for node, attrs in G.nodes(data=True) if attrs["kind"] == "value"
               and attrs["role"] == "param" and not attrs["label"]]
    # The tensor autograd gives the gradient, which W1 (made by * 0.5) does not get.
    namespace = run_script(path)
    autograd_leaf = namespace["W1"].grad_fn.next_functions[0][0].variable
    np.testing.assert_allclose(G.nodes[leaf]["grad"], autograd_leaf.grad.numpy(), rtol=1e-6)
    assert value_names(G)[leaf].text == "leaf of W1"
    assert headings(G)[leaf].text == "leaf of W1"
    assert any(caption.text.startswith("∂L/∂(leaf of W1) = 0.5 ⊙ ∂L/∂W1")
               for caption in step_captions(G))
    texts = svg_texts(draw(G).pipe("svg").decode())
    assert "leaf of" in " ".join(texts) and not plainly_written(texts)
    assert not any(re.fullmatch(r"v\d+", text.strip()) for text in texts)  # no IR id


def test_an_unnamed_leaf_without_one_named_result_is_its_role_and_shape():
    W = Tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    x = Tensor(np.ones(4), label="x")
    L = (W @ x + W @ x).sum()  # W goes into two values: no one name to take
    L.label = "L"
    L.backward()
    G = to_networkx(L)
    (leaf,) = [node for node, role in G.nodes(data="role") if role == "param"]
    assert value_names(G)[leaf].text == "param 3×4"
    assert headings(G)[leaf].text == "param 3×4"


NEURON = """\
from backpropviz import Value
class Neuron:
    def __init__(self, weights):
        self.w = [Value(w) for w in weights]
        self.b = Value(0.5)
    def __call__(self, x):
        return sum((wi * xi for wi, xi in zip(self.w, x)), self.b).tanh()
n = Neuron([-0.75, 0.25])
x1, x2 = Value(2.0), Value(-1.0)
out = n([x1, x2])
L = (out - 1.0) ** 2
L.backward()
"""


def test_a_hand_written_classs_values_are_named_by_their_path(tmp_path):
    path = _script(tmp_path, "neuron", NEURON)
    G = graph_of_script(path, quiet=True)
    by_label = {attrs["label"]: attrs for _, attrs in G.nodes(data=True) if attrs.get("label")}
    namespace = run_script(path)
    for label, value in [("n.w[0]", namespace["n"].w[0]), ("n.w[1]", namespace["n"].w[1]),
                         ("n.b", namespace["n"].b)]:
        assert by_label[label]["data"] == value.data
        assert by_label[label]["grad"] == pytest.approx(value.grad)
    texts = "".join(svg_texts(draw(G).pipe("svg").decode())).replace(" ", "")
    assert "n.w[0]" in texts and "n.b" in texts


INDEXED = """\
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 3))
x1 = torch.tensor([1.0, 2.0, -1.0])
target = 2
probs = torch.softmax(model(x1), dim=0)
rows = torch.tensor([0, 1])
picked = torch.stack([probs, probs])
loss = -torch.log(probs[target]) + picked[rows, torch.tensor([1, 0])].sum() + probs[1:].sum()
loss.backward()
"""


def test_an_index_reads_as_the_script_wrote_it(tmp_path):
    pytest.importorskip("torch")
    path = _script(tmp_path, "indexed", INDEXED)
    G = graph_of_script(path, quiet=True)
    names = {name.text: node for node, name in value_names(G).items()}
    namespace = run_script(path)
    probs = namespace["probs"].detach().numpy()
    # The number the script used, the name of the tensor it used, a slice.
    assert G.nodes[names["probs[2]"]]["data"] == pytest.approx(float(probs[2]))
    assert names.keys() >= {"picked[rows, [1, 0]]", "probs[1:]"}
    np.testing.assert_allclose(G.nodes[names["probs[1:]"]]["data"], probs[1:], rtol=1e-6)
    assert "∂loss/∂probs += ∂loss/∂(probs[2]) at [2], 0 elsewhere" in [
        caption.text for caption in step_captions(G)]
    texts = " ".join(svg_texts(draw(G).pipe("svg").decode()))
    assert "probs[2]" in texts.replace(" ", "") and "…" not in texts


def test_a_heading_is_cut_only_where_its_box_has_no_room():
    A = Tensor(np.full((3, 4), -1234.5), label="A", requires_grad=True)
    B = Tensor(np.full((3, 4), 2.25), label="B", requires_grad=True)
    wide = (A * B + A) * (B + 3.0) - A  # 21 characters: once cut at 18
    total = wide.sum()
    total.label = "total"
    total.backward()
    G = to_networkx(total)
    (node,) = [n for n in G.predecessors(next(iter(G.predecessors(
        G.graph["roots"][0]))))]
    assert headings(G)[node].text == "(A⊙B + A)⊙(B + 3) − A"
    texts = svg_texts(draw(G).pipe("svg").decode())
    assert "…" not in "".join(texts)
    # A long expression over a one-number box: cut, to the room it has.
    a, b = Value(1.0, label="a"), Value(2.0, label="b")
    long = (a * b + a) * (b + 3.0) * (a - b) * (a + b) * (a * b - 3.0) * (b * a + 7.0)
    long.backward()
    H = to_networkx(long)
    root = H.graph["roots"][0]
    written = value_names(H)[root].text
    assert "…" in written
    assert text_width(written, EXPRESSION_PT, "serif") <= heading_room(H.nodes[root])


def test_a_clips_worked_line_breaks_before_an_equals_sign_that_would_overflow():
    pytest.importorskip("manim")
    from backpropviz.animate.screen import CAPTION_WIDTH, WORKED_EM, wrapped

    # (a matrix after the last "=" made the row wider than the frame: the row was measured
    # up to the "=" only)
    pieces = ["∂L/∂W₁", "=", "∂L/∂(W₁ x₁)", "·", "x₁ᵀ", "=", "[4.867; 0; 6.086; 0]", "·",
              "[1; 2; −1]ᵀ", "=", "[4.867, 9.735, −4.867; 0, 0, 0; 6.086, 12.17, −6.086; 0, 0, 0]"]
    rows = wrapped(pieces, [piece == "=" for piece in pieces], WORKED_EM)
    assert len(rows) > 1
    for row in rows:
        assert text_width(" ".join(pieces[i] for i in row), WORKED_EM) <= CAPTION_WIDTH
