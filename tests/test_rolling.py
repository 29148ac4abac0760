"""Rolled loops: a repeated block found from the IR's structure, drawn once, with the
engine's numbers of one repetition and the shared weights' gradients as .grad holds them."""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import runpy
import subprocess
import sys

import numpy as np
import pytest

from backpropviz import Tensor, Value, render
from backpropviz.cli import main
from backpropviz.html import to_html
from backpropviz.ir import from_node_link, operand_edges, result_of, to_json, to_networkx, validate
from backpropviz.rolling import find_loop, rolled
from backpropviz.script import graph_of_script

LOOPS = pathlib.Path(__file__).resolve().parent / "loop_scripts"
BENCH_SCRIPTS = pathlib.Path(__file__).resolve().parent.parent / "bench" / "scripts"
# The scalar loop's numbers, as tests/loop_scripts/scalar_loop.py writes them.
W, U, XS = 0.8, -0.6, [0.5, -1.0, 2.0, 0.25, -0.5]


def loop_graph(name, steps, monkeypatch):
    monkeypatch.setenv("STEPS", str(steps))
    return graph_of_script(LOOPS / f"{name}.py", quiet=True)


def by_label(G, label):
    return next(node for node, name in G.nodes(data="label") if name == label)


def tanh_results(G):
    """The values the unrolled graph's tanh ops made, in the order they were made."""
    return [result_of(G, op) for op, symbol in G.nodes(data="symbol") if symbol == "tanh"]


@pytest.mark.parametrize(("name", "block_ops"), [("hand_rnn", 4), ("rnn_cell_loop", 4),
                                                 ("scalar_loop", 4), ("micrograd_rnn", 4)])
def test_the_period_is_found_by_structure(name, block_ops, monkeypatch):
    if name in ("hand_rnn", "rnn_cell_loop"):
        pytest.importorskip("torch")
    if name == "micrograd_rnn":  # another engine's Value, read by the foreign producer
        pytest.importorskip("micrograd")
    G = loop_graph(name, 5, monkeypatch)
    loop = find_loop(G)
    assert loop is not None and loop.count == 5
    assert sum(G.nodes[slot[0]]["kind"] == "op" for slot in loop.slots) == block_ops
    # each repetition's output is the carried operand of the next
    source, op_slot, arg, first = loop.carried[0]
    for k in range(1, loop.count):
        assert operand_edges(G, loop.slots[op_slot][k])[arg][0] == loop.slots[source][k - 1]
    assert first not in {node for slot in loop.slots for node in slot}
    # the shared values are the leaves every repetition uses: the weights
    assert {G.nodes[node]["role"] for node in loop.shared} <= {"param", "input"}
    assert all(not G.pred[node] for node in loop.shared)


@pytest.mark.parametrize("name", ["d2l_mlp", "mlp3", "d2l_objective", "add_mul", "fork"])
def test_no_loop_in_networks_that_do_not_repeat_their_weights(example, name):
    assert find_loop(example(name)) is None


def test_two_layers_are_a_loop_only_if_they_share_their_weights():
    x = Tensor(np.array([1.0, -2.0]), label="x")
    W1 = Tensor(np.array([[0.5, -1.0], [2.0, 0.25]]), requires_grad=True, label="W1")
    W2 = Tensor(np.array([[1.5, 0.5], [-0.5, 1.0]]), requires_grad=True, label="W2")
    y = (W2 @ (W1 @ x).relu()).relu().sum()
    y.backward()
    assert find_loop(to_networkx(y)) is None
    z = (W1 @ (W1 @ x).relu()).relu().sum()
    z.backward()
    loop = find_loop(to_networkx(z))
    assert loop is not None and loop.count == 2


def test_the_rolled_weights_gradients_are_pytorchs_grad(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setenv("STEPS", "12")
    plain = runpy.run_path(str(LOOPS / "hand_rnn.py"))  # plain PyTorch, nothing watching
    G = graph_of_script(LOOPS / "hand_rnn.py", quiet=True)
    H = rolled(G, find_loop(G))
    validate(H)
    for name in ("W_xh", "W_hh", "b"):
        drawn = H.nodes[by_label(H, name)]["grad"]
        np.testing.assert_allclose(drawn, plain[name].grad.numpy(), rtol=1e-6, atol=1e-7)
    dot = render(G, "dot", roll=True).decode()
    assert "⟲ ×12" in dot and "repetition 12&#x27;s (1 the first)" in dot


def test_repetition_k_draws_the_unrolled_graphs_numbers_of_step_k(monkeypatch):
    G = loop_graph("scalar_loop", 5, monkeypatch)
    loop = find_loop(G)
    unrolled = tanh_results(G)
    h = 0.0
    for k, x in enumerate(XS):
        before, h = h, math.tanh(W * h + U * x)
        H = rolled(G, loop, k)
        validate(H)
        out, into = H.graph["loop_back"]
        assert H.graph["loop_step"] == k and H.graph["loop_count"] == 5
        assert H.nodes[out]["data"] == pytest.approx(h)
        assert H.nodes[into]["data"] == pytest.approx(before)
        assert H.nodes[out]["grad"] == G.nodes[unrolled[k]]["grad"]
        assert H.nodes[out]["loop_data"][k] == G.nodes[unrolled[k]]["data"]
        # the weights keep the sum of all repetitions, .grad as the engine holds it
        assert H.nodes[by_label(H, "w")]["grad"] == G.nodes[by_label(G, "w")]["grad"]
    # drawn before the last repetition, backward enters the block from beyond it
    assert H.graph.get("entered") is None and rolled(G, loop, 2).graph["entered"] is True


def test_repetition_k_names_its_own_input_as_the_script_indexes_it(monkeypatch):
    # x[t] @ W_xh: repetition k's input is x[k], torch's x[k], not the last one's x[4].
    pytest.importorskip("torch")
    G = loop_graph("hand_rnn", 5, monkeypatch)
    loop = find_loop(G)
    namespace = runpy.run_path(str(LOOPS / "hand_rnn.py"))
    for k in (0, 2, 4):
        H = rolled(G, loop, k)
        inputs = [attrs for _, attrs in H.nodes(data=True)
                  if attrs["kind"] == "value" and str(attrs.get("label", "")).startswith("x[")]
        assert [attrs["label"] for attrs in inputs] == [f"x[{k}]"]
        np.testing.assert_allclose(inputs[0]["data"], namespace["x"][k].tolist(), rtol=1e-6)


def test_a_rolled_graph_round_trips_through_json(monkeypatch):
    G = loop_graph("scalar_loop", 4, monkeypatch)
    H = rolled(G, find_loop(G), 1)
    back = from_node_link(to_json(H))
    validate(back)
    assert back.graph["loop_back"] == H.graph["loop_back"]
    assert dict(back.nodes(data="loop_data")) == dict(H.nodes(data="loop_data"))


def test_the_page_shows_any_repetitions_numbers(monkeypatch, tmp_path, browser):
    G = loop_graph("scalar_loop", 5, monkeypatch)
    path = tmp_path / "loop.html"
    path.write_text(to_html(rolled(G, find_loop(G))))
    unrolled = tanh_results(G)
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    for k in (1, 3, 5):
        page.eval_on_selector("#loop-slider", "(s, k) => { s.value = k; "
                              "s.dispatchEvent(new Event('input')); }", k)
        row = page.eval_on_selector("#loop-rows tr:has(td.name:text-is('h'))",
                                    "tr => [...tr.cells].map(c => c.textContent)")
        value = G.nodes[unrolled[k - 1]]
        assert row == ["h", f"{value['data']:.4g}".replace("-", "\u2212"),
                       f"{value['grad']:.4g}".replace("-", "\u2212")]
        assert page.text_content("#loop-counter") == f"{k} / 5"
    page.focus("#loop-slider")
    page.keyboard.press("ArrowLeft")  # the slider's key, not the page's step
    assert page.text_content("#loop-counter") == "4 / 5"
    assert page.get_attribute("#bpv", "data-step") == "0"
    page.close()
    assert errors == []


def test_a_long_loop_is_rolled_by_itself(tmp_path):
    pytest.importorskip("torch")
    script = BENCH_SCRIPTS / "rnn_unrolled.py"
    out = tmp_path / "rnn.svg"
    done = subprocess.run([sys.executable, "-m", "backpropviz", "render", str(script), "-o",
                           str(out)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "STEPS": "300"})
    assert done.returncode == 0, done.stderr
    assert "repeats one block 300 times" in done.stderr and "drawn rolled" in done.stderr
    assert "⟲ ×300" in out.read_text()


def test_a_loop_past_max_nodes_is_drawn_rolled(tmp_path):
    """500 steps: past --max-nodes unrolled (refused before the layout is even tried),
    drawn rolled, with the repetition count (its clip: test_rolled_clip.py)."""
    pytest.importorskip("torch")
    from in_process import run_cli

    script = BENCH_SCRIPTS / "rnn_unrolled.py"
    env = {**os.environ, "STEPS": "500"}
    out = tmp_path / "rnn.svg"
    done = run_cli("render", script, "-o", out, env=env, text=True)
    assert done.returncode == 0, done.stderr
    assert "repeats one block 500 times, past --max-nodes" in done.stderr
    assert "⟲ ×500" in out.read_text()
    # (its export, which --max-nodes does not bound, is the whole loop unrolled)
    G = from_node_link(json.loads(run_cli("render", script, "-o", "-", "--format", "json",
                                          env=env).stdout))
    assert find_loop(G).count == 500


def test_repetition_out_of_range_and_no_loop_are_said(tmp_path, capsys):
    script = LOOPS / "scalar_loop.py"
    assert main(["render", str(script), "--repetition", "9", "-o",
                 str(tmp_path / "loop.svg")]) != 0
    assert "--repetition 9: the loop repeats 5 times (1 to 5)" in capsys.readouterr().err
    assert not (tmp_path / "loop.svg").exists()
    assert main(["render", str(script), "--roll", "--iterations", "-o",
                 str(tmp_path / "run.json")]) == 2
    assert "--roll draws the loop of one pass" in capsys.readouterr().err
    a = Value(2.0, label="a")
    with pytest.warns(UserWarning, match="no loop found"):
        assert render(to_networkx(a * a + a), "dot", roll=True)


@pytest.mark.parametrize("script", [LOOPS / "scalar_loop.py", BENCH_SCRIPTS / "rnn_unrolled.py"])
def test_every_caption_of_every_repetition_is_true_arithmetic(script, monkeypatch):
    # A shared weight's share at repetition k adds to what the later repetitions
    # sent it (loop_before, the engine's running sum): its caption says +=, truly.
    # (hand_rnn's x[t] @ W_xh is left out: a vector @ a matrix is captioned xᵀ · g
    # unrolled too, which the checker cannot work out.)
    if "rnn" in script.stem:
        pytest.importorskip("torch")
    from test_caption_arithmetic import false_arithmetic, view_lines
    monkeypatch.setenv("STEPS", "4")
    G = graph_of_script(script, quiet=True)
    loop = find_loop(G)
    for k in range(loop.count):
        H = rolled(G, loop, k)
        for view, lines in view_lines(H).items():
            assert lines, view
            assert {line: why for line in lines if (why := false_arithmetic(line))} == {}, view
            assert [line for line in lines if "(overwrote" in line or "(but the" in line] == []
        if k < loop.count - 1:
            assert set(H.graph["loop_before"]) == {node for node in loop.shared
                                                   if G.nodes[node]["grad"] is not None}


def test_a_weight_made_before_the_loop_is_read_with_every_repetitions_share(tmp_path):
    """W_xh = randn · 0.5 before the loop: the × 0.5 step reads W_xh's gradient once all
    six repetitions sent theirs (autograd's .grad), and every caption stays true."""
    pytest.importorskip("torch")
    from test_caption_arithmetic import false_arithmetic, view_lines

    from backpropviz.captions import step_captions
    from backpropviz.steps import backward_steps
    from backpropviz.views import drawn_graph

    script = LOOPS / "made_weight_loop.py"
    G = graph_of_script(script, quiet=True)
    loop = find_loop(G)
    H = drawn_graph(rolled(G, loop, loop.count - 1))
    torch_values = runpy.run_path(str(script))
    (weight,) = [node for node, label in H.nodes(data="label") if label == "W_xh"]
    (made,) = [step for step in backward_steps(H) if step.result == weight]
    assert np.allclose(made.grads[weight], torch_values["W_xh"].grad.numpy())
    (caption,) = [c for c, step in zip(step_captions(H)[1:], backward_steps(H), strict=True)
                  if step.result == weight]
    assert "holds the shares of all 6 repetitions" in caption.rule
    for view, lines in view_lines(H).items():
        assert not [line for line in lines if "not what this rule gives" in line], view
        assert {line: why for line in lines if (why := false_arithmetic(line))} == {}, view


def test_a_loop_too_small_to_read_at_slide_size_is_told_to_roll(monkeypatch):
    pytest.importorskip("torch")
    from backpropviz.errors import Note

    monkeypatch.setenv("STEPS", "30")
    G = graph_of_script(BENCH_SCRIPTS / "rnn_unrolled.py", quiet=True)
    with pytest.warns(Note, match=r"or --roll \(it repeats one block 30 times\)"):
        render(G, "svg", fit="1920x1080")


def test_a_layout_dot_gives_up_on_says_the_loop_can_be_rolled(monkeypatch, tmp_path):
    # dot stopped at its time limit on an unrolled loop (a GRU over 60 steps took more
    # than a minute): the refusal says --roll, which draws it in a second.
    from backpropviz import output
    from backpropviz.graphviz import DotTimeoutError

    G = loop_graph("scalar_loop", 5, monkeypatch)

    def stopped(*args, **kwargs):
        raise DotTimeoutError("dot did not finish the layout within 60 s, so it was stopped")

    monkeypatch.setattr(output, "_laid_out", stopped)
    with pytest.raises(DotTimeoutError, match=r"--roll \(it repeats one block 5 times\)"):
        output.write(G, tmp_path / "x.svg")
    assert not (tmp_path / "x.svg").exists()
    with pytest.raises(DotTimeoutError) as refused:  # asked for rolled: nothing to add
        output.write(G, tmp_path / "x.svg", roll=True)
    assert "--roll" not in str(refused.value)


def _cells_read(cells):
    """A page's cells (true minus signs) read back as numbers."""
    return np.array([[float(cell.replace("\u2212", "-")) for cell in row] for row in cells])


@pytest.mark.parametrize("repetition", [None, 4, 1])
def test_the_last_step_shows_each_shared_weights_grad_as_torch_has_it(repetition,
                                                                      monkeypatch):
    # The steps sweep the drawn repetition; the repetitions backward reaches after it
    # then add their shares in a closing step, so the last step of the page and of
    # --steps shows each shared weight's .grad (plain PyTorch's), as the figure does,
    # not the sum so far.
    pytest.importorskip("torch")
    from backpropviz.html import page_data, value_details
    from backpropviz.steps import backward_steps, state_at
    from backpropviz.views import drawn_graph

    monkeypatch.setenv("STEPS", "6")
    plain = runpy.run_path(str(LOOPS / "hand_rnn.py"))  # nothing watching
    G = graph_of_script(LOOPS / "hand_rnn.py", quiet=True)
    view = drawn_graph(rolled(G, find_loop(G), None if repetition is None else repetition - 1))
    steps = backward_steps(view)
    last = state_at(view, len(steps))  # what --steps draws last
    page = page_data(view)["steps"]
    details = value_details(view)  # (what the page shows of each value at each step)
    assert len(page) == len(steps) + 1
    for name in ("W_xh", "W_hh", "b"):
        node, want = by_label(view, name), plain[name].grad.numpy()
        np.testing.assert_allclose(view.nodes[node]["grad"], want, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(last.grads[node], want, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(steps[-1].grads[node], want, rtol=1e-6, atol=1e-7)
        shown = _cells_read(page[-1]["grads"][str(node)] if "grads" in page[-1] else [])
        np.testing.assert_allclose(shown.reshape(want.shape), want, rtol=5e-4, atol=1e-6)
        step, cells = details[str(node)]["grads"][-1]
        assert step <= len(steps)
        np.testing.assert_allclose(_cells_read(cells).reshape(want.shape), want, rtol=1e-6,
                                   atol=1e-7)
    if repetition == 1:  # the first repetition: backward reaches it last, nothing to add
        assert all(step.op is not None for step in steps)
    else:
        assert steps[-1].op is None and set(steps[-1].updated) == {
            by_label(view, name) for name in ("W_xh", "W_hh", "b")}


def test_the_closing_steps_caption_adds_the_engines_shares_truly(monkeypatch, tmp_path):
    """Its worked line: the sum so far + each later share = the gradient, each number
    the engine's (the shares on the unrolled graph's edges), true as written; past a
    few shares, counted. Its numbers are w's and u's gradients by finite differences,
    and the --steps pictures' last one draws them."""
    from test_caption_arithmetic import false_arithmetic

    from backpropviz.captions import step_captions
    from backpropviz.formatting import display_number

    def loss(w, u):
        h = 0.0
        for x in XS:
            h = math.tanh(w * h + u * x)
        return h * h

    step = 1e-6
    want = {"w": (loss(W + step, U) - loss(W - step, U)) / (2 * step),
            "u": (loss(W, U + step) - loss(W, U - step)) / (2 * step)}
    G = loop_graph("scalar_loop", 5, monkeypatch)
    loop = find_loop(G)
    H = rolled(G, loop)
    closing = step_captions(H)[-1]
    for line, name in zip(closing.worked, ("w", "u"), strict=True):
        assert line.startswith(f"∂loss/∂{name} = ") and false_arithmetic(line) is None
        terms = line.split(" = ", 1)[1].split(" ≈ ")[0].split(" = ")[0].split(" + ")
        assert len(terms) == 5  # its sum so far, then repetitions 4 to 1
        assert line.endswith(display_number(want[name]))
    assert "Repetitions 4 to 1" in closing.rule and "all 5 repetitions'" in closing.rule
    # past WRITTEN_SHARES the shares are counted, the line still true
    nine = loop_graph("scalar_loop", 9, monkeypatch)
    (counted, _) = step_captions(rolled(nine, find_loop(nine)))[-1].worked
    assert " + the 8 shares of repetitions 8 to 1 = " in counted
    assert false_arithmetic(counted) is None
    monkeypatch.setenv("STEPS", "5")
    out = tmp_path / "steps"
    assert main(["render", str(LOOPS / "scalar_loop.py"), "--roll", "--steps", str(out)]) == 0
    pictures = sorted(out.glob("step-*.svg"))
    assert len(pictures) == len(H.graph["backward_order"]) + 2  # step 0 and the closing
    drawn = pictures[-1].read_text()
    assert all(f">{display_number(want[name])}<" in drawn for name in want)


def test_an_lstms_cell_state_entering_a_repetition_holds_what_that_repetition_sent():
    """An LSTM's c goes on in its own repetition (h = o·tanh(c)) and into the next
    (f·c): the box c_prev of repetition k holds what repetition k sent back, the running
    sum autograd held then, not c's whole gradient; and a repetition drawn before the
    last is entered with what the later ones sent, not c's whole gradient either."""
    pytest.importorskip("torch")
    from test_caption_arithmetic import false_arithmetic, view_lines

    G = graph_of_script(pathlib.Path(__file__).parent / "torch_scripts" / "lstm_cell.py",
                        quiet=True)
    loop = find_loop(G)
    assert loop is not None and loop.count == 3
    for k in range(loop.count):
        H = rolled(G, loop, k)
        for node, attrs in H.nodes(data=True):
            if attrs["kind"] != "value" or attrs.get("grad") is None or not H._succ[node] \
                    or node in loop.shared:  # (a weight's: every repetition's, by design)
                continue
            sent = sum(np.asarray(data["grad"], dtype=np.float64)
                       for _, _, data in H.out_edges(node, data=True))
            seed = H.graph.get("seeds", {}).get(node) if k < loop.count - 1 else None
            entered_too = 0 if seed is None else np.asarray(seed, dtype=np.float64)
            np.testing.assert_allclose(np.asarray(attrs["grad"], dtype=np.float64),
                                       sent + entered_too, rtol=1e-5, atol=1e-7,
                                       err_msg=f"{attrs['label']} at repetition {k + 1}")
        for view, lines in view_lines(H).items():
            assert {line: why for line in lines if (why := false_arithmetic(line))} == {}, view
    # The share is one autograd held: the running sum on the edge of f·c_prev.
    last = rolled(G, loop)
    c_prev = by_label(last, "c_prev")
    (edge,) = last.out_edges(c_prev, data=True)
    assert last.nodes[c_prev]["grad"] == edge[2]["running"]
    assert not np.allclose(last.nodes[c_prev]["grad"], G.nodes[by_label(G, "c2")]["grad"])


def test_the_pages_table_names_each_repetitions_own_input(monkeypatch, tmp_path, browser):
    """The slider at repetition t lists t's own input, x[t − 1], with its numbers, and
    says that the drawing still shows the repetition it shows."""
    pytest.importorskip("torch")
    G = loop_graph("hand_rnn", 4, monkeypatch)
    path = tmp_path / "loop.html"
    path.write_text(to_html(rolled(G, find_loop(G))))
    page = browser.new_page()
    page.goto(path.as_uri())
    for k in (1, 2, 4):
        page.eval_on_selector("#loop-slider", "(s, k) => { s.value = k; "
                              "s.dispatchEvent(new Event('input')); }", k)
        names = page.eval_on_selector_all("#loop-rows td.name", "tds => tds.map(td => "
                                          "td.textContent)")
        inputs = [name for name in names if re.fullmatch(r"x\[\d\]", name)]
        assert inputs == [f"x[{k - 1}]"], k
        said = page.text_content("#loop-said")
        assert said.startswith("the drawing shows repetition 4 of 4")
        assert ("this table, repetition" in said) == (k != 4)
    page.close()


def test_an_engine_whose_order_mixes_the_repetitions_still_ends_on_its_grad():
    """A student's engine that sorts with a stack sends repetitions 3 to 1's shares of w
    while it sweeps repetition 4's block (after w's share, before u's): the closing step
    adds them, said as such, and the last step holds w's and u's gradients by finite
    differences (before, w was left at repetition 4's share, and jumped in the recap)."""
    from test_caption_arithmetic import false_arithmetic

    from backpropviz.captions import step_captions
    from backpropviz.names import value_names
    from backpropviz.steps import backward_steps, start_grads

    def loss(w, u):
        h = 0.0
        for x in [1.0, -0.5, 0.8, 0.3]:
            h = math.tanh(w * h + u * x)
        return h * h

    step = 1e-6
    want = {"w": (loss(0.5 + step, -1.2) - loss(0.5 - step, -1.2)) / (2 * step),
            "u": (loss(0.5, -1.2 + step) - loss(0.5, -1.2 - step)) / (2 * step)}
    G = graph_of_script(LOOPS / "stack_engine_rnn.py", quiet=True)
    H = rolled(G, find_loop(G))
    assert H.graph["loop_mixed"] is True
    closing = step_captions(H)[-1]
    assert closing.rule.startswith("Repetitions 3 to 1, which backward reached while it "
                                   "swept the drawn one or after it")
    (line,) = closing.worked
    assert line.startswith("∂loss/∂w = ") and false_arithmetic(line) is None
    named = {name.text: node for node, name in value_names(H).items()}
    last = backward_steps(H)[-1]
    assert last.op is None and list(last.updated) == [named["w"]]
    assert math.isclose(last.grads[named["w"]], want["w"], rel_tol=1e-6)
    # u's last share is the drawn repetition's own: its step ends on u's gradient. The
    # other repetitions' shares reached u while repetition 4 was swept, not before: u has
    # no gradient when the sweep begins, and its step says whence its sum so far came.
    assert math.isclose(H.nodes[named["u"]]["grad"], want["u"], rel_tol=1e-6)
    assert H.graph["loop_arrived"] == [named["u"]] and named["u"] not in start_grads(H)
    (adds,) = [done for done in backward_steps(H) if named["u"] in done.updated]
    assert math.isclose(adds.grads[named["u"]], want["u"], rel_tol=1e-6)
    assert "u held the other repetitions' shares already, which this engine sent while " \
        "it swept this one" in step_captions(H)[adds.index].rule


def test_a_loop_in_an_engine_with_children_sets_is_found_with_its_bias():
    """h = tanh(w·h + u·x + b) in the lecture's class: a set keeps the sum's operands,
    read in the order of what each is (its earliest named descendant, then where the
    graph reached it), so every repetition takes them alike; before, the first took b
    last and the others first, and no loop was found (found by a trial user). The
    rolled picture ends on w's, u's and b's gradients by finite differences."""
    from backpropviz.names import value_names
    from backpropviz.steps import backward_steps

    def loss(w, u, b):
        h = 0.0
        for x in [1.0, -0.5, 0.8, 0.3]:
            h = math.tanh(w * h + u * x + b)
        return h * h

    at, step = (0.5, -1.2, 0.1), 1e-6
    want = {}
    for i, name in enumerate("wub"):
        up, down = list(at), list(at)
        up[i] += step
        down[i] -= step
        want[name] = (loss(*up) - loss(*down)) / (2 * step)
    G = graph_of_script(LOOPS / "lecture_rnn_bias.py", quiet=True)
    loop = find_loop(G)
    assert loop is not None and loop.count == 4
    H = rolled(G, loop)
    named = {name.text: node for node, name in value_names(H).items()}
    final = {}
    for done in backward_steps(H):
        final.update(done.grads)
    for name in "wub":
        assert math.isclose(final[named[name]], want[name], rel_tol=1e-6), name


def test_an_unnamed_input_of_each_repetition_is_named_by_its_own_number_on_the_slider():
    """x wrapped in a Value at each step has no name: the drawing names it by the drawn
    repetition's number (0.3); the page's slider names it at each repetition by that
    repetition's own (it read "0.3 | 1" at t = 1; found by a trial user)."""
    from backpropviz.page_loop import loop_data

    G = graph_of_script(LOOPS / "lecture_rnn_bias.py", quiet=True)
    rows = loop_data(rolled(G, find_loop(G)))["rows"]
    (x,) = [row for row in rows if row["name"] == "0.3"]
    assert x["names"] == ["1", "−0.5", "0.8", "0.3"] == x["data"]


def test_the_pages_table_names_each_value_after_its_own_repetitions_numbers(monkeypatch):
    """The scalar loop's u · x, x an unnamed number each repetition has its own of: at
    repetition t the table names it u·(x at t), with the number that makes its data (it
    had named it after the drawn repetition's x at every t: u·(−0.5) and data 0.3 at t = 1,
    false as written)."""
    from backpropviz.page_loop import loop_data

    G = loop_graph("scalar_loop", 5, monkeypatch)
    rows = {row["name"]: row for row in loop_data(rolled(G, find_loop(G)))["rows"]}
    (x,) = [row for row in rows.values() if row["names"] and row["name"] == "−0.5"]
    (ux,) = [row for name, row in rows.items() if name == "u·(−0.5)"]
    assert [float(name.replace("−", "-")) for name in x["names"]] == XS
    for t, value in enumerate(XS):
        written = f"({x['names'][t]})" if value < 0 else x["names"][t]
        assert ux["names"][t] == f"u·{written}"
        assert float(ux["data"][t].replace("−", "-")) == pytest.approx(U * value, rel=1e-4)
    # (a value named after no such number keeps one name)
    assert rows["h"]["names"] is None


@pytest.mark.parametrize(("script", "repetition"), [
    ("stack_engine_rnn", 0), ("stack_engine_rnn", 2), ("set_engine_rnn", 0),
    ("set_engine_rnn", 3)])
def test_the_first_step_says_only_the_repetitions_whose_shares_came_first(script, repetition):
    """Engines that mix the repetitions (a stack; children in a set, whose order is the
    set's): drawn at an earlier repetition, the first step says which repetitions'
    shares each shared value's sum already holds (it had said every later one's, and
    the closing step then added some of them again: u's 9, 7, 6, 4 and 3 of 12); those
    and the closing step's are every repetition but the drawn one, each once."""
    from backpropviz.captions import step_captions
    from backpropviz.closing import repetitions
    from backpropviz.names import value_names
    from backpropviz.steps import loop_sums_known

    G = graph_of_script(LOOPS / f"{script}.py", quiet=True)
    count = G.graph.get("loop_count") or find_loop(G).count
    H = rolled(G, find_loop(G), repetition)
    named = value_names(H)
    came, rest = H.graph["loop_came_before"], H.graph.get("loop_shares", {})
    rule = step_captions(H)[0].rule
    assert loop_sums_known(H)
    for value in loop_sums_known(H):
        before = came[value]
        after = [t for t, _ in rest.get(value, ())]
        assert sorted(before + after) == [t for t in range(1, count + 1) if t != repetition + 1]
        said = f"{repetitions([[t, None] for t in before])}, which backward reached first"
        assert said in rule and named[value].text in rule.split(said)[1].split(";")[0]
    # The closing step says, for each shared value, the repetitions it adds then: no
    # share the first step said was in (it had said every value's together).
    closing = step_captions(H)[-1].rule
    for value, pairs in rest.items():
        whose = repetitions([[t, None] for t in sorted({t for t, _ in pairs if t},
                                                         reverse=True)])
        parts = [part for part in closing.split("; ") if part.lower().startswith(whose.lower())]
        assert parts and named[value].text in parts[0].split(" (+=)")[0], (whose, closing)


def test_the_advice_offers_no_option_the_picture_already_has(tmp_path):
    """Too small on a slide, an unrolled nn.GRU is told to --roll, and to use --compact;
    drawn with --modules, where the GRU is one op already, it is not told to roll it
    (nor, drawn --compact, to use --compact)."""
    pytest.importorskip("torch")
    import warnings

    from backpropviz.errors import Note
    from backpropviz.options import Options
    from backpropviz.output import write

    script = tmp_path / "gru.py"
    script.write_text("import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
                      "gru = nn.GRU(2, 3, batch_first=True)\n"
                      "_, h = gru(torch.randn(1, 3, 2))\nloss = h.sum()\nloss.backward()\n")
    G = graph_of_script(script, quiet=True, max_nodes=100_000)

    def advice(frame: str = "1920x1080", **options) -> str:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            write(G, tmp_path / "gru.svg", Options(fit=frame, **options))
        (said,) = [str(w.message) for w in caught if issubclass(w.category, Note)
                   and "a slide wants" in str(w.message)]
        return said

    unrolled = advice()
    assert "--roll (it repeats one block 3 times)" in unrolled and "--compact" in unrolled
    assert "--compact" not in advice(compact=True)
    # (the GRU one operator, holding its weights, reads well on a slide: too small in a
    # frame of 480×270, it is still not told to roll)
    assert "--roll" not in advice("480x270", modules=True)


def test_a_rolled_loop_folded_into_rows_carries_its_back_edge_by_marks(monkeypatch):
    """Fitted to a slide, the rolled RNN folds into rows; its back edge, from the block's
    output in the last row to the box it enters in the first, is drawn as a folded edge
    is: a piece in each row, to and from a mark named after the output, the count on the
    first (it had run straight across the rows, and made dot crash on a GRU's)."""
    from backpropviz import draw
    from backpropviz.folding import bands
    from backpropviz.graphviz import run_dot

    G = loop_graph("hand_rnn", 4, monkeypatch)
    H = rolled(G, find_loop(G))
    diagram = draw(H, fit="1920x1080")
    assert diagram.fit.wrap != 1
    row = bands(H, diagram.fit.wrap)
    out, box = H.graph["loop_back"]
    assert row[out] != row[box]
    laid = json.loads(run_dot(diagram.source, "json"))
    names = {obj["_gvid"]: obj["name"] for obj in laid["objects"] if "pos" in obj}
    ends = {edge["id"]: (names[edge["tail"]], names[edge["head"]]) for edge in laid["edges"]
            if "id" in edge}
    to, onto = f"{out}->{box}#loop/to", f"{out}->{box}#loop/from"
    assert ends[out + "/loop"] == (out, to) and ends[out + "/loop/on"] == (onto, box)
    for tail, head in ends.values():
        assert not (tail in row and head in row and row[tail] != row[head]), (tail, head)
    (piece,) = [edge for edge in laid["edges"] if edge.get("id") == out + "/loop"]
    assert piece["style"] == "dashed"
    marks = {obj["name"]: obj for obj in laid["objects"] if obj["name"] in (to, onto)}
    label = H.nodes[out]["label"]
    assert len(marks) == 2 and all(label in mark["label"] for mark in marks.values())
    # the count in the mark the output's piece runs to (a label on so short a piece
    # stood on the output's box)
    assert "×4" in marks[to]["label"] and "×4" not in marks[onto]["label"]


@pytest.mark.parametrize("repetition", [None, 2, 3, 5, 8])
def test_a_right_engine_whose_order_mixes_the_repetitions_is_not_called_off_the_rule(
        repetition):
    """A shared weight's sum that reached it while the drawn repetition was swept is
    still the sum its first drawn share adds to: a right engine's rolled loop is not
    said to break the chain rule (it had been, at some repetitions: 'a gradient is not
    the sum of its shares', while check found all 78 right)."""
    from backpropviz.worked import off_the_rule

    G = graph_of_script(LOOPS / "set_engine_rnn.py", quiet=True)
    assert off_the_rule(G) == ([], [])
    assert off_the_rule(rolled(G, find_loop(G), repetition)) == ([], [])
