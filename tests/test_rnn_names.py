"""An LSTM's and a GRU's values are named as PyTorch's equations name them, step by step.

Each script in torch_scripts/ is drawn by the command line. The reference is
written here from PyTorch's documented equations with plain tensor ops on the
module's own weights (every value keeping its gradient), and is first checked
against PyTorch's fused cell: its states must be the module's, so the names
below are PyTorch's values, not the drawing's.
"""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np
import pytest
import torch
from test_cli import written_graph

from backpropviz import cli
from backpropviz.check import disagreements

SCRIPTS = Path(__file__).resolve().parent / "torch_scripts"
CELL_NAME = re.compile(r"[rznifgoch]\d+(_\d+)?")
FIRST_STATE = re.compile(r"[hc]0(_\d+)?")


def drawn(name: str | Path, tmp_path: Path) -> dict:
    """The drawn values by label of the script ``name`` (in torch_scripts/, or a path),
    having checked that its picture adds up."""
    script = name if isinstance(name, Path) else SCRIPTS / f"{name}.py"
    out = tmp_path / f"{script.stem}.json"
    assert cli.main(["render", str(script), "-o", str(out)]) == 0
    G = written_graph(out)
    assert disagreements(G) == []
    return {attrs["label"]: attrs for _, attrs in G.nodes(data=True)
            if attrs["kind"] == "value" and attrs["label"]}


def gradients_are_plain(values: dict, module: torch.nn.Module, name: str) -> None:
    """Each drawn parameter of ``module`` (the script's ``name``) has the gradient plain
    PyTorch's fused function gave it."""
    for path, parameter in module.named_parameters():
        np.testing.assert_allclose(values[f"{name}.{path}"]["grad"], parameter.grad.numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=path)


def kept(tensor: torch.Tensor) -> torch.Tensor:
    tensor.retain_grad()
    return tensor


def gru_step(x, h, w_ih, w_hh, b_ih, b_hh, t: str, names: dict) -> torch.Tensor:
    """torch.nn.GRU's documented equations, each named value kept as ``names[r1]`` ..."""
    x_r, x_z, x_n = (x @ w_ih.T + b_ih).chunk(3, dim=1)
    h_r, h_z, h_n = (h @ w_hh.T + b_hh).chunk(3, dim=1)
    r = names["r" + t] = kept(torch.sigmoid(x_r + h_r))
    z = names["z" + t] = kept(torch.sigmoid(x_z + h_z))
    n = names["n" + t] = kept(torch.tanh(x_n + r * h_n))
    h = names["h" + t] = kept((1 - z) * n + z * h)
    return h


def lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh, t: str, names: dict):
    """torch.nn.LSTM's documented equations, named as they name them."""
    i, f, g, o = (x @ w_ih.T + b_ih + h @ w_hh.T + b_hh).chunk(4, dim=1)
    i = names["i" + t] = kept(torch.sigmoid(i))
    f = names["f" + t] = kept(torch.sigmoid(f))
    g = names["g" + t] = kept(torch.tanh(g))
    o = names["o" + t] = kept(torch.sigmoid(o))
    c = names["c" + t] = kept(f * c + i * g)
    h = names["h" + t] = kept(o * torch.tanh(c))
    return h, c


def rnn_step(x, h, w_ih, w_hh, b_ih, b_hh, t: str, names: dict, relu: bool = False):
    """torch.nn.RNN's documented equation: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)."""
    total = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    h = names["h" + t] = kept(torch.relu(total) if relu else torch.tanh(total))
    return h


def weights(module, suffix: str = "") -> list[torch.Tensor]:
    return [getattr(module, f"{kind}{suffix}") for kind in
            ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]


def compare(values: dict, names: dict, expected_names: set,
            script_names: set = frozenset()) -> None:
    """Every drawn cell name (but the script's own) is one of the reference's, with its
    numbers and gradient."""
    cell_names = {label for label in values if CELL_NAME.fullmatch(label)} - script_names
    assert cell_names == expected_names
    for label in {label for label in cell_names if FIRST_STATE.fullmatch(label)}:
        # the zeros a step 1 starts from, which nn makes (no gradient: not asked for)
        assert not np.any(values[label]["data"]) and values[label]["grad"] is None
        cell_names.discard(label)
    for label in cell_names:
        for key, number in (("data", names[label]), ("grad", names[label].grad)):
            np.testing.assert_allclose(np.asarray(values[label][key], dtype=np.float64),
                                       number.detach().double().numpy(),
                                       rtol=1e-5, atol=1e-6, err_msg=f"{key} of {label}")


def test_a_gru_cell_in_the_scripts_loop_names_each_steps_gates(tmp_path):
    values = drawn("gru_cell", tmp_path)
    script = runpy.run_path(str(SCRIPTS / "gru_cell.py"))
    cell, xs = script["cell"], script["xs"]
    names: dict = {}
    h = torch.zeros(1, 2)
    fused = torch.zeros(1, 2)
    for t, x in enumerate(xs, 1):
        h = gru_step(x, h, *weights(cell), str(t), names)
        fused = cell(x, fused)
        torch.testing.assert_close(h, fused)  # the reference is PyTorch's GRU
    h.pow(2).sum().backward()
    # The last state is the script's h: its name wins over h3.
    compare(values, names, {f"{letter}{t}" for letter in "rzn" for t in (1, 2, 3)}
            | {"h0", "h1", "h2"})
    np.testing.assert_allclose(values["h"]["data"], names["h3"].detach().numpy(), rtol=1e-6)


def test_an_lstm_cell_in_the_scripts_loop_names_its_gates_and_states(tmp_path):
    values = drawn("lstm_cell", tmp_path)
    script = runpy.run_path(str(SCRIPTS / "lstm_cell.py"))
    cell, xs = script["cell"], script["xs"]
    names: dict = {}
    h = c = torch.zeros(1, 3)
    fused = (h, c)
    for t, x in enumerate(xs, 1):
        h, c = lstm_step(x, h, c, *weights(cell), str(t), names)
        fused = cell(x, fused)
        torch.testing.assert_close((h, c), fused)
    (h.sum() + c.pow(2).sum()).backward()
    compare(values, names, {f"{letter}{t}" for letter in "ifgo" for t in (1, 2, 3)}
            | {"h0", "h1", "h2", "c0", "c1", "c2"})


def test_a_stacked_lstm_indexes_its_values_by_step_and_layer(tmp_path):
    values = drawn("lstm", tmp_path)
    script = runpy.run_path(str(SCRIPTS / "lstm.py"))
    lstm, x = script["lstm"], script["x"]
    names: dict = {}
    inputs = list(x.unbind(1))  # batch first: step t is x[:, t]
    for layer in (1, 2):
        h = c = torch.zeros(2, 3)
        outputs = []
        for t, x_t in enumerate(inputs, 1):
            h, c = lstm_step(x_t, h, c, *weights(lstm, f"_l{layer - 1}"), f"{t}_{layer}", names)
            outputs.append(h)
        inputs = outputs
    torch.testing.assert_close(torch.stack(outputs, 1), script["out"])
    loss = (script["head"](h) - script["y"]).pow(2).mean()
    loss.backward()
    every = {f"{letter}{t}_{layer}" for letter in "ifgohc" for t in (1, 2, 3)
             for layer in (1, 2)}
    # Layer 2's last cell state has no gradient from the loss, and no part drawn here.
    compare(values, names, every & set(values) | {"h0_1", "c0_1", "h0_2", "c0_2"})
    assert {"i1_1", "h3_1", "c3_1", "o3_2", "h3_2"} <= set(values)


def test_a_bidirectional_gru_names_its_forward_direction_only(tmp_path):
    values = drawn("gru", tmp_path)
    script = runpy.run_path(str(SCRIPTS / "gru.py"))
    gru, x = script["gru"], script["x"].detach()
    names: dict = {}
    h = torch.zeros(1, 2)
    for t, x_t in enumerate(x, 1):
        h = gru_step(x_t, h, *weights(gru, "_l0"), str(t), names)
    # Only the forward half of out comes from these: its gradient is 2·out's forward half.
    torch.testing.assert_close(torch.cat([names[f"h{t}"] for t in (1, 2, 3)]),
                               script["out"][:, 0, :2])
    forward = torch.stack([names[f"h{t}"] for t in (1, 2, 3)])
    (forward.pow(2).sum() + 0 * h.sum()).backward()
    assert {label for label in values if CELL_NAME.fullmatch(label)} == \
        {f"{letter}{t}" for letter in "rznh" for t in (1, 2, 3)} | {"h0"}
    for label in ("r1", "z2", "n3", "h1", "h3"):
        np.testing.assert_allclose(values[label]["data"], names[label].detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    # The reverse direction's gradient reaches h1..h3 only through out's forward half,
    # where the reference sent its own.
    for label in ("h3", "r3", "n2"):
        np.testing.assert_allclose(values[label]["grad"], names[label].grad.numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_an_rnn_is_drawn_unrolled_its_states_named_by_step(tmp_path):
    """nn.RNN runs the whole sequence as one fused op; drawn, it is each step's
    h_t = tanh(...) of the one before, with PyTorch's numbers."""
    values = drawn("rnn", tmp_path)
    script = runpy.run_path(str(SCRIPTS / "rnn.py"))
    rnn, x = script["rnn"], script["x"]
    names: dict = {}
    h = torch.zeros(2, 2)
    for t, x_t in enumerate(x, 1):
        h = rnn_step(x_t, h, *weights(rnn, "_l0"), str(t), names)
    out = torch.stack([names[f"h{t}"] for t in (1, 2, 3, 4)])
    torch.testing.assert_close(out, script["out"])
    (out[-1].pow(2).sum() + out.mean()).backward()
    compare(values, names, {"h0", "h1", "h2", "h3", "h4"})


def test_a_relu_rnn_cell_from_the_scripts_own_first_state(tmp_path):
    values = drawn("rnn_cell", tmp_path)
    script = runpy.run_path(str(SCRIPTS / "rnn_cell.py"))
    cell, xs = script["cell"], script["xs"]
    names: dict = {}
    h0 = h = torch.full((1, 3), 0.5, requires_grad=True)
    for t, x in enumerate(xs, 1):
        h = rnn_step(x, h, *weights(cell), str(t), names, relu=True)
        torch.testing.assert_close(h, cell(x, names.get(f"h{t - 1}", h0)))
    h.sum().backward()
    compare(values, names, {"h1", "h2"}, {"h0"})  # h3 is the script's h
    np.testing.assert_allclose(values["h0"]["grad"], h0.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("script", ["gru_cell", "lstm_cell"])
def test_no_caption_writes_a_gate_out(script):
    """With the gates and states named, a step's caption writes each value in a few
    words (∂loss/∂z2, ∂loss/∂(1 − z2)), not as the nest of ops that made it
    (∂loss/∂σ(chunk[1](linear(xs[1]) + linear(σ(chunk[3](…)))⊙…)))."""
    from backpropviz.captions import step_captions
    from backpropviz.names import value_names
    from backpropviz.script import graph_of_script

    G = graph_of_script(SCRIPTS / f"{script}.py", quiet=True)
    written = [name.text for name in value_names(G).values()]
    assert not [text for text in written if "σ(" in text or "tanh(chunk" in text]
    assert max(map(len, written)) <= 50, max(written, key=len)
    assert all("σ(" not in caption.text for caption in step_captions(G))


LONG_SEQUENCE = """
    import torch
    from torch import nn

    torch.manual_seed(0)
    rnn = nn.{module}(input_size=2, hidden_size=3)
    x = torch.randn({steps}, 1, 2)
    out, _ = rnn(x)
    loss = out[-1].sum()
    loss.backward()
"""


@pytest.mark.parametrize(("module", "steps"), [("RNN", 300), ("GRU", 120)])
def test_a_long_sequence_is_drawn_with_its_module_closed(tmp_path, capsys, module, steps):
    """Steps written out too many to lay out (an RNN's 300), or past --max-nodes (a GRU's
    120): the refusal says to close the module, and --modules draws it as one op."""
    from test_cli import script

    from backpropviz.script import graph_of_script
    from backpropviz.views import drawn_graph

    path = script(tmp_path, "long.py", LONG_SEQUENCE.format(module=module, steps=steps))
    assert cli.main(["render", str(path), "-o", str(tmp_path / "unrolled.svg")]) == 1
    assert capsys.readouterr().err.rstrip().endswith("--modules")
    assert not (tmp_path / "unrolled.svg").exists()
    assert cli.main(["render", str(path), "--modules", "-o", str(tmp_path / "closed.svg")]) == 0
    # (the IR the command drew from, as its script front end builds it: the command's
    # JSON of 1,000 ops and more took longer to write and read back than the script's run)
    G = graph_of_script(path, max_nodes=10_000, quiet=True)
    assert sum(attrs["kind"] == "op" for _, attrs in G.nodes(data=True)) > 1000
    closed = drawn_graph(G, modules=True)  # what --modules drew: rnn, out[-1], sum
    ops = {attrs["op"]: attrs for _, attrs in closed.nodes(data=True) if attrs["kind"] == "op"}
    assert sorted(ops) == ["getitem", "group", "sum"] and ops["group"]["symbol"] == "rnn"


def names_drawn(tmp_path: Path, source: str) -> list[str]:
    """The labels of the values ``source`` (a script) draws, in the order it made them."""
    from test_cli import script

    out = tmp_path / "drawn.json"
    assert cli.main(["render", str(script(tmp_path, "script.py", source)), "-o", str(out)]) == 0
    return [attrs["label"] for _, attrs in written_graph(out).nodes(data=True)
            if attrs["kind"] == "value" and attrs["label"]]


def test_a_cell_given_one_sample_at_a_time_counts_its_steps(tmp_path):
    """nn.GRUCell on an unbatched x_t adds a batch of one to its state and takes it off
    again: the steps still count 1, 2, 3 (the last state is the script's h)."""
    drawn = names_drawn(tmp_path, """
        import torch
        torch.manual_seed(7)
        cell = torch.nn.GRUCell(2, 2)
        xs = torch.randn(3, 2)
        h = torch.zeros(2)
        for x_t in xs:
            h = cell(x_t, h)
        h.sum().backward()
    """)
    assert [name for name in drawn if CELL_NAME.fullmatch(name)] == [
        "h0", "r1", "z1", "n1", "h1", "r2", "z2", "n2", "h2", "r3", "z3", "n3", "h3"]
    assert "h" in drawn
    # each step's input is the script's row, with the batch of one nn put on it
    assert {"xs[0]", "xs[1]", "xs[2]"} <= set(drawn)


def test_a_name_the_script_uses_for_something_else_is_not_given(tmp_path):
    drawn = names_drawn(tmp_path, """
        import torch, torch.nn as nn
        torch.manual_seed(0)
        enc, rnn = nn.Linear(2, 2), nn.RNN(2, 2)
        x = torch.randn(2, 1, 2)
        h1 = torch.tanh(enc(x))  # the script's own h1: the encoder's features
        out, hn = rnn(h1)
        out.sum().backward()
    """)
    assert drawn.count("h1") == 1 and "h2" in drawn


def test_a_rolled_cell_names_its_block_by_the_step_t(tmp_path):
    """Rolled, the block stands for every repetition: r_t, z_t, n_t, and the state that
    enters it h_prev, whichever repetition's numbers are drawn."""
    for repetition in ("1", "3"):
        out = tmp_path / f"rolled{repetition}.json"
        assert cli.main(["render", str(SCRIPTS / "gru_cell.py"), "--roll", "--repetition",
                         repetition, "-o", str(out)]) == 0
        labels = {attrs.get("label") for _, attrs in written_graph(out).nodes(data=True)}
        assert {"r_t", "z_t", "n_t", "h_prev"} <= labels
        assert not labels & {"r1", "r3", "h1", "h2", "h3_prev"}


def test_an_rnn_too_small_to_read_on_a_slide_is_told_to_close_its_module():
    from backpropviz import render
    from backpropviz.errors import Note
    from backpropviz.script import graph_of_script

    G = graph_of_script(SCRIPTS / "lstm.py", quiet=True)
    with pytest.warns(Note, match=r"or --modules \(each PyTorch module as one op\)"):
        render(G, "svg", fit="1920x1080")
    import warnings

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        render(G, "svg", fit="1920x1080", modules=True)
    assert not [warning for warning in said if "--modules" in str(warning.message)]


PACKED = """
    import torch
    from torch import nn
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    torch.manual_seed(0)
    rnn = nn.{module}(2, 3, num_layers={layers}, bidirectional={both}, batch_first=True)
    x = torch.randn(3, 4, 2, requires_grad=True)
    packed = pack_padded_sequence(x, [4, 2, 3], batch_first=True, enforce_sorted=False)
    out, state = rnn(packed)
    padded, lengths = pad_packed_sequence(out, batch_first=True)
    hn = (state[0] if isinstance(state, tuple) else state) * 1.0
    loss = padded.pow(2).sum() + hn.sum()
    loss.backward()
"""


@pytest.mark.parametrize(("module", "layers", "both"), [("GRU", 1, False), ("LSTM", 2, True),
                                                        ("RNN", 1, True)])
def test_a_packed_sequence_is_written_out_with_pytorchs_numbers(tmp_path, module, layers, both):
    """Sequences of lengths 4, 2, 3 packed (pack_padded_sequence): drawn step by step,
    a sequence that has ended keeping its state; every gradient is plain PyTorch's."""
    from test_cli import script

    source = PACKED.format(module=module, layers=layers, both=both)
    path = script(tmp_path, "packed.py", source)
    values = drawn(path, tmp_path)
    plain = runpy.run_path(str(path))  # PyTorch's fused function, not recorded
    for name in ("x", "packed.data", "hn", "loss"):
        expected = plain["packed"].data if name == "packed.data" else plain[name]
        np.testing.assert_allclose(values[name]["data"], expected.detach().numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(values["x"]["grad"], plain["x"].grad.numpy(), rtol=1e-5,
                               atol=1e-6)
    gradients_are_plain(values, plain["rnn"], "rnn")
    assert ({"h0", "h1", "h2", "h4"} if layers == 1 else {"h1_2", "c4_2"}) <= set(values)


def test_an_lstm_with_projections_is_written_out_with_pytorchs_numbers(tmp_path):
    """proj_size: each h projected (h W_hrᵀ), its own weight a cell; drawn op by op."""
    from test_cli import script

    path = script(tmp_path, "projected.py", """
        import torch
        from torch import nn

        torch.manual_seed(0)
        lstm = nn.LSTM(2, 3, proj_size=2, num_layers=2)
        x = torch.randn(3, 1, 2, requires_grad=True)
        out, (h, c) = lstm(x)
        loss = out.pow(2).sum() + c.sum()
        loss.backward()
    """)
    values = drawn(path, tmp_path)
    assert {"h3_1", "c3_2", "o1_2"} <= set(values) and np.shape(values["h3_1"]["data"]) == (1, 2)
    plain = runpy.run_path(str(path))
    gradients_are_plain(values, plain["lstm"], "lstm")
    np.testing.assert_allclose(values["x"]["grad"], plain["x"].grad.numpy(), rtol=1e-5,
                               atol=1e-6)


def test_a_cell_given_one_sample_at_a_time_rolls_with_pytorchs_gradients(tmp_path):
    """nn's cells take the batch of one off each state and put it back on the next
    step (squeeze, unsqueeze): each step reads the state the one before made, so the
    loop is found, and the weights' gradients are still plain PyTorch's."""
    from test_cli import script

    from backpropviz.rolling import find_loop
    from backpropviz.script import graph_of_script

    path = script(tmp_path, "one_sample.py", """
        import torch
        torch.manual_seed(7)
        cell = torch.nn.LSTMCell(2, 2)
        xs = torch.randn(3, 2)
        h, c = torch.zeros(2), torch.zeros(2)
        for x_t in xs:
            h, c = cell(x_t, (h, c))
        (h.sum() + c.pow(2).sum()).backward()
    """)
    G = graph_of_script(path, quiet=True)
    assert disagreements(G) == []
    loop = find_loop(G)
    assert loop is not None and loop.count == 3
    plain = runpy.run_path(str(path))
    values = {attrs["label"]: attrs for _, attrs in G.nodes(data=True) if attrs.get("label")}
    gradients_are_plain(values, plain["cell"], "cell")


@pytest.mark.parametrize("script", ["gru_cell", "lstm_cell", "rnn", "rnn_cell"])
def test_every_caption_with_the_cells_names_is_true_arithmetic(script):
    """Each line every view prints (worked captions, subtitles) is arithmetic true as
    written, with the gates' and states' names in it."""
    from test_caption_arithmetic import false_arithmetic, view_lines

    from backpropviz.script import graph_of_script

    G = graph_of_script(SCRIPTS / f"{script}.py", quiet=True)
    for view, lines in view_lines(G).items():
        assert lines, view
        assert {line: why for line in lines if (why := false_arithmetic(line))} == {}, view
