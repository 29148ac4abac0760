"""The memory timeline: what forward keeps for backward, checked by hand and against autograd."""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from backpropviz import Tensor, Value
from backpropviz.ir import from_graphml, from_node_link, to_graphml, to_networkx, to_node_link
from backpropviz.memory import BACKWARD, FORWARD, timeline, to_json
from backpropviz.memory_chart import chart_bytes, growth_svg, timeline_svg
from backpropviz.script import graph_of_script, run_script
from tests.in_process import run_cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SVG = "{http://www.w3.org/2000/svg}"


def by_label(G: nx.MultiDiGraph) -> dict:
    """Value ids by the name the caption gives them (labels, and ``o − y`` style names)."""
    from backpropviz.names import value_names

    return {name.text: node for node, name in value_names(G).items()}


# ---------------------------------------------------------------- the book's MLP by hand


def test_the_books_mlp_keeps_what_each_rule_reads_and_frees_it_after_the_last(example):
    # z = W1 x keeps W1 (2×2 float64: 32 B) and x (16 B) for ∂L/∂x = W1ᵀ g, ∂L/∂W1 = g xᵀ;
    # h = ReLU(z) keeps z (16 B) for its gate; o = W2 h keeps W2 (16 B) and h (16 B);
    # o − y keeps nothing; (o − y)² keeps o − y (8 B) for 2(o − y); Σ keeps nothing;
    # L = Σ / 2 keeps both its operands (8 B each) for g/2 and −g Σ/2².
    G = example("d2l_mlp")
    names = {node: name for name, node in by_label(G).items()}
    line = timeline(G)
    forward = [(G.nodes[s.op]["op"], s.bytes_held, sorted(names[v] for v in s.kept))
               for s in line.forward]
    assert forward == [("matmul", 48, ["W1", "x"]), ("relu", 64, ["z"]),
                       ("matmul", 96, ["W2", "h"]), ("sub", 96, []),
                       ("pow", 104, ["o − y"]), ("sum", 104, []),
                       ("div", 120, ["2", "Σ(o − y)²"])]
    # Backward runs the ops in reverse; each value goes once its only reader has run.
    backward = [(G.nodes[s.op]["op"], s.bytes_held, sorted(names[v] for v in s.freed))
                for s in line.backward]
    assert backward == [("div", 104, ["2", "Σ(o − y)²"]), ("sum", 104, []),
                        ("pow", 96, ["o − y"]), ("sub", 96, []),
                        ("matmul", 64, ["W2", "h"]), ("relu", 48, ["z"]),
                        ("matmul", 0, ["W1", "x"])]
    assert line.peak_bytes == 120 == G.graph["stored_bytes"]
    assert line.peak.phase == FORWARD and names[line.peak.held[0]] == "W1"
    assert line.bytes_by_role(line.peak) == {"param": 48, "input": 16, "intermediate": 48,
                                             "const": 8}


def test_a_value_two_rules_read_is_counted_once_and_freed_after_the_second():
    a = Value(3.0, label="a")
    b = a * a  # keeps a (read by both edges' rule)
    c = b * a  # keeps b and a again
    c.backward()
    G = to_networkx(c, names={"a": a, "b": b, "c": c})
    line = timeline(G)
    assert [s.bytes_held for s in line.forward] == [8, 16]  # a once, then b
    # Backward: c's rule runs first (frees b; a is still read by b's rule), then b's.
    assert [s.bytes_held for s in line.backward] == [8, 0]
    a_id = by_label(G)["a"]
    assert line.kept[a_id].saved_by == ("op0", "op1")
    assert line.kept[a_id].freed_by == "op0"


def test_a_rule_that_never_runs_keeps_its_values_to_the_end(example):
    G = example("d2l_mlp", backward=False)
    line = timeline(G)
    assert line.backward == () and line.forward[-1].bytes_held == 120
    assert all(kept.freed_by is None for kept in line.kept.values())


# ---------------------------------------------------------------- every script


# Every example (the capstone's students' engines too) and the benchmarks' scripts; a
# ResNet-18 on a 224×224 image takes seconds to record, a case of scale.
SCRIPTS = [pytest.param(script, marks=[pytest.mark.slow] if "resnet" in script else [])
           for script in sorted(str(p.relative_to(ROOT)) for p in [
               *EXAMPLES.rglob("*.py"), *(ROOT / "bench" / "scripts").glob("*.py")]
               if p.name != "student_value.py")]


@pytest.mark.parametrize("script", SCRIPTS)
def test_forward_only_adds_backward_only_frees_and_the_peak_is_the_legends_total(script):
    G = graph_of_script(ROOT / script, quiet=True)
    line = timeline(G)
    forward = [s.bytes_held for s in line.forward]
    backward = [s.bytes_held for s in line.backward]
    assert forward == sorted(forward) and backward == sorted(backward, reverse=True)
    assert all(not s.freed for s in line.forward) and all(not s.kept for s in line.backward)
    for step in line.steps:  # what is held adds up, each value once
        assert len(set(step.held)) == len(step.held)
        assert step.bytes_held == sum(line.kept[item].nbytes for item in step.held)
    # Nothing is freed before the forward pass ends, so its end is the peak, which is
    # what the figure's legend adds up (each producer's own sum of stored values).
    assert line.peak_bytes == forward[-1] == G.graph["stored_bytes"]
    if set(G.graph["backward_order"]) == {n for n, k in G.nodes(data="kind") if k == "op"}:
        assert backward[-1] == 0


def test_the_timeline_survives_the_json_and_graphml_exports(example):
    G = example("d2l_objective")
    want = to_json(timeline(G))
    assert to_json(timeline(from_node_link(json.loads(json.dumps(to_node_link(G)))))) == want
    assert to_json(timeline(from_graphml(to_graphml(G)))) == want


def test_a_graph_without_saves_is_read_from_the_registry(example):
    G = example("d2l_mlp")
    want = to_json(timeline(G))
    for _, attrs in G.nodes(data=True):
        attrs.pop("saves", None)
    assert to_json(timeline(G)) == want


# ---------------------------------------------------------------- growth


def mlp_peak(depth: int, batch: int, inputs: int = 3, width: int = 5) -> int:
    rng = np.random.default_rng(depth * 100 + batch)
    h = Tensor(rng.standard_normal((batch, inputs)))
    sizes = [inputs] + [width] * depth
    for fan_in, fan_out in itertools.pairwise(sizes):
        h = (h @ Tensor(rng.standard_normal((fan_in, fan_out)), requires_grad=True)).relu()
    L = (h @ Tensor(rng.standard_normal((width, 1)), requires_grad=True)).sum()
    L.backward()
    return timeline(to_networkx(L)).peak_bytes


def kept_by_hand(depth: int, batch: int, inputs: int = 3, width: int = 5) -> int:
    # The input and every weight matrix (for the weights' and the inputs' gradients),
    # each layer's pre-activation (ReLU's gate) and activation (the next matmul's
    # operand); the sum keeps nothing. 8 bytes a number.
    weights = inputs * width + (depth - 1) * width * width + width
    activations = batch * inputs + depth * 2 * batch * width
    return 8 * (weights + activations)


def test_the_peak_grows_linearly_with_depth_and_with_batch():
    depths = [mlp_peak(d, 4) for d in range(1, 7)]
    batches = [mlp_peak(3, b) for b in range(1, 9)]
    assert depths == [kept_by_hand(d, 4) for d in range(1, 7)]
    assert batches == [kept_by_hand(3, b) for b in range(1, 9)]
    for peaks in (depths, batches):
        steps = np.diff(peaks)
        assert (steps > 0).all() and len(set(steps.tolist())) == 1  # a straight line


def test_the_growth_example_measures_and_draws_its_slide(tmp_path, capsys):
    out = tmp_path / "growth.svg"
    run_script(EXAMPLES / "memory_growth.py", ["-o", str(out)])  # as `python SCRIPT -o` runs it
    stdout = capsys.readouterr().out
    rows = re.findall(r"^\s*(\d+)\s+(\d+) B\s+(\d+) B\s+(\S+)", stdout, re.M)
    by_depth, by_batch = rows[:8], rows[8:]
    assert [int(r[0]) for r in by_depth] == list(range(1, 9))
    assert [int(r[0]) for r in by_batch] == [1, 2, 4, 8, 16, 32, 64]
    for rows_ in (by_depth, by_batch):
        peaks = [int(r[1]) for r in rows_]
        assert peaks == sorted(peaks) and len(set(peaks)) == len(peaks)
    # Depth 1, batch 16, 16 inputs, 32 units: X, W1, z1, h1, W2, o: 8 bytes a number.
    assert int(by_depth[0][1]) == 8 * (16 * 16 + 16 * 32 + 2 * 16 * 32 + 32 + 16)
    weights = {int(r[2]) for r in by_batch}
    assert len(weights) == 1  # the weights do not grow with the batch
    if any(r[3] != "-" for r in rows):
        assert {r[3] for r in rows} == {"0"}  # autograd under no_grad keeps nothing
    root = ET.fromstring(out.read_text())
    lines = root.findall(f".//{SVG}polyline")
    assert len(lines) == 6 if any(r[3] != "-" for r in rows) else 4
    values = [float(c.get("data-bytes")) for c in root.findall(f".//{SVG}circle")]
    assert int(by_depth[-1][1]) in values and int(by_batch[-1][1]) in values


# ---------------------------------------------------------------- PyTorch


needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="PyTorch is not installed")

TORCH_SCRIPTS = {
    "linear": """
import torch
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
x = torch.randn(5, 3)
y = torch.randn(5, 2)
L = torch.nn.functional.mse_loss(net(x), y)
""",
    "cross_entropy": """
import torch
torch.manual_seed(0)
W = torch.randn(3, 4, requires_grad=True)
x = torch.randn(6, 3, dtype=torch.float32)
t = torch.tensor([0, 1, 2, 3, 0, 1])
L = torch.nn.functional.cross_entropy(torch.tanh(x @ W), t)
""",
    "half": """
import torch
w = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float16, requires_grad=True)
x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16)
L = (torch.sigmoid(w * x) ** 2).sum()
""",
}

# Autograd's own account, by its saved-tensor hooks, in a process of its own (nothing of
# backpropviz's loaded): every tensor it saves passes pack (each storage counted once), and
# every read of one in backward passes unpack; a hook on every node marks when its rule has
# run, so what is still to be read is known after each. One line of JSON a script.
AUTOGRAD_SAYS = """
import json, runpy, sys, torch
def account(path):
    saved, events = {}, []
    def key(t):
        return (t.untyped_storage().data_ptr(), t.storage_offset(), t.numel())
    def pack(t):
        saved[key(t)] = max(saved.get(key(t), 0), t.numel() * t.element_size())
        return t
    def unpack(t):
        events.append(key(t))
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        L = runpy.run_path(path, run_name="__main__")["L"]
    nodes, stack = set(), [L.grad_fn]
    while stack:
        node = stack.pop()
        if node is not None and node not in nodes:
            nodes.add(node)
            node.register_hook(lambda *_: events.append(None))
            stack.extend(f for f, _ in node.next_functions)
    L.backward()
    last = {k: i for i, k in enumerate(events) if k is not None}
    held = [sum(saved.values())]
    for i, k in enumerate(events):
        if k is None:
            held.append(sum(n for s, n in saved.items() if last.get(s, -1) > i))
    return {"saved": sum(saved.values()), "held": held}
for path in sys.argv[1:]:
    print(json.dumps(account(path)))
"""


@pytest.fixture(scope="module")
def autograd_says(tmp_path_factory) -> dict[str, dict]:
    """Autograd's account of each of TORCH_SCRIPTS (one process for them all: PyTorch's
    start-up once)."""
    folder = tmp_path_factory.mktemp("autograd")
    paths = []
    for name, source in sorted(TORCH_SCRIPTS.items()):
        paths.append(folder / f"{name}.py")
        paths[-1].write_text(source)
    done = subprocess.run([sys.executable, "-c", AUTOGRAD_SAYS, *map(str, paths)],
                          capture_output=True, text=True, timeout=120, check=True)
    return {path.stem: json.loads(line) for path, line in zip(paths, done.stdout.splitlines(),
                                                               strict=True)}


def torch_timeline(tmp_path: Path, name: str) -> tuple[nx.MultiDiGraph, object]:
    """The IR and the memory timeline of one of TORCH_SCRIPTS, run as the CLI runs it."""
    script = tmp_path / f"{name}.py"
    script.write_text(TORCH_SCRIPTS[name])
    G = graph_of_script(script, quiet=True)
    return G, timeline(G)


def changes(numbers: list[int]) -> list[int]:
    """The numbers with repeats in a row dropped."""
    return [n for i, n in enumerate(numbers) if i == 0 or n != numbers[i - 1]]


@needs_torch
@pytest.mark.parametrize("name", sorted(TORCH_SCRIPTS))
def test_a_torch_scripts_timeline_is_what_autograd_saved_and_read(tmp_path, name,
                                                                  autograd_says):
    _, line = torch_timeline(tmp_path, name)
    autograd = autograd_says[name]
    assert line.peak_bytes == autograd["saved"] > 0
    # Freed once the last rule reading it has run: the same bytes, step for step. A
    # composite call (cross_entropy: log_softmax, then nll_loss) is one op in the drawing,
    # so it lets go of what it kept after all its nodes ran: fewer steps, the same bytes.
    ours = changes([line.peak_bytes, *(s.bytes_held for s in line.backward)])
    theirs = changes(autograd["held"])
    if name == "cross_entropy":
        remaining = iter(theirs)
        assert all(n in remaining for n in ours) and ours[-1] == theirs[-1] == 0
        assert len(ours) < len(theirs)
    else:
        assert ours == theirs


@needs_torch
def test_nn_linears_saved_weight_counts_at_its_dtype(tmp_path):
    G, line = torch_timeline(tmp_path, "linear")
    names = by_label(G)
    # The second layer's input needs a gradient, so autograd keeps its weight (2×4 float32);
    # the first layer's input does not, so its weight is not kept (only x, for its gradient).
    assert line.kept[str(names["net.2.weight"])].nbytes == 2 * 4 * 4
    assert str(names["net.0.weight"]) not in line.kept
    assert line.kept[str(names["x"])].nbytes == 5 * 3 * 4


@needs_torch
def test_a_number_autograd_keeps_as_a_tensor_counts_too(example):
    # L = Σ(o − y)² / 2: DivBackward keeps the 2 as a float64 scalar tensor (the pack hook
    # does not see such wrapped numbers, so the count is taken from the node itself).
    G = example("torch_mlp")
    line = timeline(G)
    division = next(op for op, a in G.nodes(data=True) if a.get("op") == "div")
    (two,) = [v for v in G.nodes[division]["saves"] if G.nodes[v]["role"] == "const"]
    assert line.kept[two].nbytes == 8 and G.nodes[two]["data"] == 2.0
    # The float32 rest as the hooks count it for examples/torch_mlp.py: x 8, h 8, W2 8, o − y 4.
    assert line.peak_bytes - 8 == 28


@needs_torch
def test_what_a_composite_keeps_inside_counts_as_its_own(tmp_path):
    _, line = torch_timeline(tmp_path, "cross_entropy")
    inner = [kept for kept in line.kept.values() if kept.role == "inner"]
    assert [kept.name for kept in inner] == ["inside cross_entropy"]
    # It goes when cross_entropy's rule has run: the first backward step.
    assert inner[0].freed_by == line.backward[0].op
    assert inner[0].id not in line.backward[0].held


# ---------------------------------------------------------------- the chart and the CLI


def test_each_bar_is_as_tall_as_its_bytes_and_the_peak_is_marked(example):
    G = example("d2l_mlp")
    line = timeline(G)
    root = ET.fromstring(timeline_svg(line))
    bars = root.findall(f".//{SVG}g[@class]")
    steps = [g for g in bars if g.get("class").startswith("step")]
    assert [int(g.get("data-bytes")) for g in steps] == [s.bytes_held for s in line.steps]
    heights = [sum(float(r.get("height")) for r in g.findall(f"{SVG}rect[@data-value]"))
               for g in steps]
    per_byte = heights[line.peak.index - 1] / line.peak_bytes
    assert heights == pytest.approx([s.bytes_held * per_byte for s in line.steps], abs=0.5)
    assert [g.get("id") for g in steps if "peak" in g.get("class")] == ["step-7"]
    texts = root.findall(f".//{SVG}text")
    assert min(float(t.get("font-size")) for t in texts) >= 20  # readable on a slide
    words = " ".join(t.text or "" for t in texts)
    assert "peak 120 bytes" in words
    for name in ("W1", "x", "z", "W2", "h"):  # the peak's values, named (W₁: W, then 1 lowered)
        assert any("".join(t.itertext()) == name for t in texts)
    w1 = next(t for t in texts if "".join(t.itertext()) == "W1")
    (index,) = [run for run in w1 if run.text == "1"]
    assert float(index.get("dy")) > 0 and float(index.get("font-size")) < float(w1.get("font-size"))


def test_the_chart_is_a_1920_by_1080_png():
    G = to_networkx(Value(2.0, label="a") * Value(3.0, label="b"))
    png = chart_bytes(timeline_svg(timeline(G)), "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 1920 and int.from_bytes(png[20:24], "big") == 1080


def test_growth_panels_put_each_point_where_its_bytes_are():
    from backpropviz.memory_chart import Panel, Series

    svg = growth_svg([Panel("p", "x", [1, 2, 4], [Series("training", [100, 200, 400])])],
                     title="t")
    cys = [float(c.get("cy")) for c in ET.fromstring(svg).findall(f".//{SVG}circle")]
    assert cys[0] - cys[1] == pytest.approx((cys[1] - cys[2]) / 2)  # linear in bytes


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``backpropviz ARGS`` in this process (tests/in_process.py)."""
    return run_cli(*args, cwd=cwd, text=True)


def test_the_memory_command_writes_the_json_the_issue_asks_for(tmp_path):
    done = cli("memory", str(EXAMPLES / "d2l_mlp.py"), "-o", "mem.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "mem.json").read_text())
    assert data["peak_bytes"] == 120
    assert [s["phase"] for s in data["steps"]] == [FORWARD] * 7 + [BACKWARD] * 7
    assert [s["bytes_held"] for s in data["steps"]] == [48, 64, 96, 96, 104, 104, 120,
                                                          104, 104, 96, 96, 64, 48, 0]
    assert all(re.fullmatch(r"op\d+", s["op"]) for s in data["steps"])
    assert sorted(data["values"][v]["name"] for v in data["peak"]["values"]) == \
        sorted(["W1", "x", "z", "W2", "h", "o − y", "Σ(o − y)²", "2"])


@pytest.mark.parametrize("fmt", ["svg", "png", "pdf", "html"])
def test_the_memory_command_writes_each_format(tmp_path, fmt):
    done = cli("memory", str(EXAMPLES / "fork.py"), "-o", f"mem.{fmt}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = (tmp_path / f"mem.{fmt}").read_bytes()
    assert data.startswith({"svg": b"<svg", "png": b"\x89PNG", "pdf": b"%PDF",
                            "html": b"<!DOCTYPE html>"}[fmt])


def test_the_memory_command_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path):
    done = cli("memory", str(EXAMPLES / "fork.py"), "-o", "mem.gif", cwd=tmp_path)
    assert done.returncode == 2 and "unknown format: 'gif'" in done.stderr
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    done = cli("memory", str(empty), "-o", "mem.svg", cwd=tmp_path)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "no graph found" in done.stderr
    # A script that fails: its own traceback, then our one line; no chart.
    bad = tmp_path / "bad.py"
    bad.write_text("from backpropviz import Value\nx = Value(1.0)\nraise ValueError('no')\n")
    done = cli("memory", str(bad), "-o", "mem.svg", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("backpropviz: error:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.py", "empty.py"]



def test_a_graph_whose_rules_read_nothing_says_so_and_marks_no_peak():
    a, b = Value(2.0, label="a"), Value(-1.0, label="b")
    c = a + b - 3  # add and subtract pass the gradient on without reading a value
    c.backward()
    line = timeline(to_networkx(c, names={"a": a, "b": b, "c": c}))
    assert line.peak_bytes == 0 and line.kept == {}
    root = ET.fromstring(timeline_svg(line))
    assert "nothing is kept" in " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert not [g for g in root.iter(f"{SVG}g") if "peak" in (g.get("class") or "")]


def test_a_group_drawn_as_one_op_keeps_what_its_ops_kept():
    # The book's MLP with its hidden layer as one group: drawn closed, the layer keeps
    # W1 and x (still drawn) and z (inside it, 16 bytes); the peak stays 120 bytes.
    from backpropviz import group
    from backpropviz.views import drawn_graph

    x = Tensor([1.0, 2.0], label="x")
    W1 = Tensor([[1.0, -1.0], [0.0, 1.0]], label="W1", requires_grad=True)
    W2 = Tensor([[2.0, -1.0]], label="W2", requires_grad=True)
    with group("hidden"):
        h = (W1 @ x).relu()
    L = ((W2 @ h) ** 2).sum() / 2
    L.backward()
    G = to_networkx(L, names={"x": x, "W1": W1, "W2": W2, "h": h, "L": L})
    whole, closed = timeline(G), timeline(drawn_graph(G))
    assert [s.bytes_held for s in closed.forward] == [64, 96, 104, 104, 120]
    assert closed.peak_bytes == whole.peak_bytes == 120
    (inner,) = [kept for kept in closed.kept.values() if kept.role == "inner"]
    assert (inner.name, inner.nbytes) == ("inside hidden", 16)
    assert [s.bytes_held for s in closed.backward][-1] == 0


def test_labels_too_wide_for_their_bar_are_staggered_not_cut(example):
    # mlp3's 22 bars are too narrow for "W2 h1 + b2": every other bar's labels go a
    # row lower, and no label is shortened with "…".
    line = timeline(example("mlp3"))
    root = ET.fromstring(timeline_svg(line))
    labels = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert not [label for label in labels if label.endswith("…")]
    assert {line.results[step.op] for step in line.steps} <= set(labels)
