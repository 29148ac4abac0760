"""Several backward passes in PyTorch: each gradient drawn is what autograd held, and adds up."""

from __future__ import annotations

import json
import random
import re
import textwrap
from pathlib import Path

import pytest

from backpropviz import graph_of_script
from backpropviz.cli import main
from backpropviz.ir import from_node_link, validate

torch = pytest.importorskip("torch")

from backpropviz.torch_import import TorchImportError, capture, from_torch  # noqa: E402


def write(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "lecture.py"
    path.write_text(textwrap.dedent(source))
    return path


def plain_run(path: Path) -> dict:
    """The script run by plain Python, without backpropviz: its namespace at the end."""
    namespace: dict = {"__name__": "__main__"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def close(drawn, expected, rel: float = 1e-6) -> bool:
    """A drawn number (or nested lists) equal to a torch tensor's, to float32 rounding."""
    return torch.allclose(torch.tensor(drawn, dtype=torch.float64),
                          expected.detach().double(), rtol=rel, atol=1e-6)


def by_label(G) -> dict:
    return {attrs["label"]: attrs for _, attrs in G.nodes(data=True)
            if attrs["kind"] == "value" and attrs["label"]}


def node_of(G, label: str) -> str:
    (node,) = [v for v, name in G.nodes(data="label") if name == label]
    return node


def noted_rest(G, label: str) -> float | list:
    """The share a note says the drawing leaves out of ``label``'s gradient (0 if none)."""
    for note in G.graph.get("notes", []):
        if note.startswith(f"{label}.grad is drawn"):
            found = re.search(r"(?:share is|holds) (\[[^\]]*\]|\S+)", note).group(1)
            numbers = [float(x.replace("−", "-")) for x in found.strip("[]").split(", ")]
            return numbers if found.startswith("[") else numbers[0]
    return 0.0


def drawn_sum(G, value: str) -> object:
    """What is drawn flowing into ``value``: its seed and the contributions on its operand
    edges (a value's operand edges run from it to the ops that used it)."""
    total = torch.tensor(G.graph["seeds"].get(value, 0.0), dtype=torch.float64)
    for _, _, grad in G.out_edges(value, data="grad"):
        if grad is not None:
            total = total + torch.tensor(grad, dtype=torch.float64)
    return total


def assert_adds_up(G) -> None:
    """Every drawn gradient is its seed plus the contributions drawn into it, plus the rest
    a note gives; the last running sum on its edges is the gradient drawn."""
    for value, attrs in G.nodes(data=True):
        if attrs["kind"] != "value" or attrs["grad"] is None:
            continue
        rest = torch.tensor(noted_rest(G, attrs["label"]), dtype=torch.float64)
        expected = drawn_sum(G, value) + rest
        assert torch.allclose(torch.tensor(attrs["grad"], dtype=torch.float64), expected,
                              rtol=1e-3, atol=1e-5), (attrs["label"], attrs["grad"], expected)


# ---------------------------------------------------------------- two losses, one trunk

# (a script of its own: the schema test reads its graph too)
TWO_LOSSES = (Path(__file__).resolve().parent / "torch_scripts" / "two_losses.py").read_text()


def test_two_losses_from_one_trunk_are_both_drawn_with_their_seeds(tmp_path):
    path = write(tmp_path, TWO_LOSSES)
    G = graph_of_script(path, quiet=True)
    validate(G)
    values = by_label(G)
    plain = plain_run(path)
    assert values["a"]["grad"] == plain["a"].grad.item() == 16.0  # 2a · (3 + 1)
    # h's gradient is 3 from L1 plus 1 from L2: both losses are drawn, each seeded with 1.
    assert values["h"]["grad"] == 4.0
    assert {G.nodes[v]["label"] for v in G.graph["roots"]} == {"L1", "L2"}
    assert {G.nodes[v]["label"]: seed for v, seed in G.graph["seeds"].items()} == \
        {"L1": 1.0, "L2": 1.0}
    h = node_of(G, "h")
    assert sorted(grad for _, _, grad in G.out_edges(h, data="grad")) == [1.0, 3.0]
    # The running sums follow the passes: L1's share arrived first, then L2's.
    order = [G.nodes[next(iter(G.successors(op)))]["label"] for op in G.graph["backward_order"]]
    assert order == ["L1", "L2", "h"]
    assert sorted(running for _, _, running in G.out_edges(h, data="running")) == [3.0, 4.0]
    assert any("2 backward passes" in note for note in G.graph["notes"])
    assert_adds_up(G)
    # Two calls, not one from both losses at once (backward([L1, L2])): the first step
    # says the passes add up, and what that sum differentiates.
    from backpropviz.captions import step_captions

    assert step_captions(G)[0].rule == ("seeds: 2 backward passes, from L1 and from L2, add "
                                        "up in .grad, so the gradients are those of L = L1 + L2")


def test_one_backward_from_two_losses_at_once_is_said_so(tmp_path):
    from backpropviz.captions import step_captions

    path = write(tmp_path, TWO_LOSSES.replace("L1.backward(retain_graph=True)\nL2.backward()",
                                              "torch.autograd.backward([L1, L2])"))
    G = graph_of_script(path, quiet=True)
    assert by_label(G)["a"]["grad"] == 16.0 and "backward_passes" not in G.graph
    assert step_captions(G)[0].rule == ("seeds: backward starts from L1 and L2 at once, so "
                                        "it differentiates L = L1 + L2")


def test_a_second_loss_computed_from_the_first_seeds_both(tmp_path):
    path = write(tmp_path, """
        import torch

        w = torch.tensor(1.5, requires_grad=True)
        loss = torch.tanh(w)
        total = 2 * loss
        loss.backward(retain_graph=True)
        total.backward()
    """)
    G = graph_of_script(path, quiet=True)
    validate(G)
    values = by_label(G)
    plain = plain_run(path)
    assert values["w"]["grad"] == pytest.approx(plain["w"].grad.item(), rel=1e-6)
    # loss is seeded by its own backward (1) and gets 2 from total's: 3 in all.
    assert values["loss"]["grad"] == 3.0
    assert G.graph["seeds"][node_of(G, "loss")] == 1.0
    assert_adds_up(G)


def test_one_backward_call_from_two_roots_seeds_both():
    with capture() as recording:
        w = torch.tensor(1.5, requires_grad=True)
        L1 = torch.tanh(w)
        L2 = 2 * L1  # computed from L1, and seeded along with it
        torch.autograd.backward([L1, L2])
    G = from_torch(L2, names={"w": w, "L1": L1, "L2": L2}, recording=recording)
    validate(G)
    assert {G.nodes[v]["label"]: seed for v, seed in G.graph["seeds"].items()} == \
        {"L1": 1.0, "L2": 1.0}
    assert by_label(G)["L1"]["grad"] == 3.0  # its own 1, and 2 from L2
    assert by_label(G)["w"]["grad"] == pytest.approx(w.grad.item(), rel=1e-6)
    assert_adds_up(G)


# ---------------------------------------------------------------- micro-batches

MICRO_BATCHES = """
    import torch

    w = torch.tensor(1.0, requires_grad=True)
    batches = [torch.tensor(1.0), torch.tensor(2.0), torch.tensor(-1.0), torch.tensor(3.0)]
    for x in batches:
        loss = (w * x - 1) ** 2
        loss.backward()  # gradients of the four micro-batches add up in w.grad
    grad_at_step = w.grad.clone()
    with torch.no_grad():  # the optimizer step, as torch.optim.SGD(lr=0.1) takes it
        w -= 0.1 * w.grad
    w.grad = None
"""


def test_micro_batches_note_the_share_of_the_passes_not_drawn(tmp_path):
    path = write(tmp_path, MICRO_BATCHES)
    G = graph_of_script(path, quiet=True)
    validate(G)
    plain = plain_run(path)
    w = by_label(G)["w"]
    # d/dw (wx − 1)² = 2x(wx − 1) at w = 1: 0, 4, 4 and 12 for x = 1, 2, −1, 3.
    assert w["grad"] == plain["grad_at_step"].item() == 20.0
    assert w["data"] == 1.0  # as the forward passes used it, before the step
    (note,) = [note for note in G.graph["notes"] if note.startswith("w.grad")]
    assert "3 earlier backward passes not drawn" in note and "optimizer step" in note
    assert noted_rest(G, "w") == 0.0 + 4.0 + 4.0
    assert w["passes"] == 4
    w_edges = list(G.out_edges(node_of(G, "w"), data=True))
    assert [attrs["grad"] for _, _, attrs in w_edges] == [12.0]  # the last micro-batch's
    assert [attrs["running"] for _, _, attrs in w_edges] == [20.0]
    assert_adds_up(G)


def test_passes_before_a_reset_of_grad_are_not_counted(tmp_path):
    path = write(tmp_path, """
        import torch

        w = torch.tensor(1.0, requires_grad=True)
        for step, x in enumerate([1.0, 2.0, -1.0, 3.0]):
            if step == 2:
                w.grad.zero_()  # a new accumulation starts: the last two micro-batches
            loss = (w * x - 1) ** 2
            loss.backward()
    """)
    G = graph_of_script(path, quiet=True)
    validate(G)
    plain = plain_run(path)
    assert by_label(G)["w"]["grad"] == plain["w"].grad.item() == 4.0 + 12.0
    (note,) = [note for note in G.graph["notes"] if note.startswith("w.grad")]
    assert "1 earlier backward pass not drawn" in note
    assert noted_rest(G, "w") == 4.0  # 2x(wx − 1) at x = −1; the zeroed passes are out
    assert_adds_up(G)


def test_micro_batches_of_a_vector_weight_note_each_entry_of_the_share(tmp_path):
    path = write(tmp_path, """
        import torch

        w = torch.tensor([0.5, -1.0], requires_grad=True)
        data = [(torch.tensor([1.0, 2.0]), 1.0), (torch.tensor([0.0, 1.0]), -1.0),
                (torch.tensor([2.0, -1.0]), 0.5)]
        for x, y in data:
            loss = ((w * x).sum() - y) ** 2
            loss.backward()
    """)
    G = graph_of_script(path, quiet=True)
    validate(G)
    plain = plain_run(path)
    # The first two micro-batches' gradients, each from a fresh run of plain PyTorch.
    earlier = torch.zeros(2)
    for x, y in plain["data"][:2]:
        w = plain["w"].detach().clone().requires_grad_()
        (((w * x).sum() - y) ** 2).backward()
        earlier += w.grad
    assert close(by_label(G)["w"]["grad"], plain["w"].grad)
    assert close(noted_rest(G, "w"), earlier, rel=1e-3)
    assert_adds_up(G)


def test_a_training_loop_that_zeroes_its_gradients_gets_no_note_of_earlier_passes(tmp_path):
    path = write(tmp_path, """
        import torch
        from torch import nn

        torch.manual_seed(0)
        model = nn.Linear(2, 1)
        x = torch.randn(4, 2)
        y = torch.randn(4, 1)
        for epoch in range(3):
            model.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            last_grads = [p.grad.clone() for p in model.parameters()]
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
    """)
    G = graph_of_script(path, quiet=True)
    validate(G)
    plain = plain_run(path)
    values = by_label(G)
    weight, bias = plain["last_grads"]
    assert close(values["model.weight"]["grad"], weight)
    assert close(values["model.bias"]["grad"], bias)
    assert not any(".grad is drawn" in note for note in G.graph.get("notes", []))
    assert not any("passes" in attrs for _, attrs in G.nodes(data=True))
    assert_adds_up(G)


def test_a_root_inside_the_graph_backward_ran_through_is_entered_from_beyond():
    with capture() as recording:
        a = torch.tensor(2.0, requires_grad=True)
        h = a * a
        L = 3 * h
        L.backward()
    G = from_torch(h, names={"a": a, "h": h, "L": L}, recording=recording)
    validate(G)
    # Only h is drawn: its gradient, dL/dh = 3, comes from L, beyond the drawing.
    assert [G.nodes[v]["label"] for v in G.graph["roots"]] == ["h"]
    assert G.graph["seeds"] == {node_of(G, "h"): 3.0} and G.graph["entered"]
    assert by_label(G)["a"]["grad"] == a.grad.item() == 12.0
    assert_adds_up(G)


# ---------------------------------------------------------------- torch.autograd.grad

def test_autograd_grad_is_drawn_as_the_gradient_it_returned_and_says_grad_is_unset(tmp_path):
    path = write(tmp_path, """
        import torch

        x = torch.tensor(2.0, requires_grad=True)
        y = x ** 3
        (dy_dx,) = torch.autograd.grad(y, x)
    """)
    G = graph_of_script(path, quiet=True)
    validate(G)
    plain = plain_run(path)
    assert plain["x"].grad is None
    values = by_label(G)
    assert values["x"]["grad"] == plain["dy_dx"].item() == 12.0  # 3x²
    assert "dy_dx" not in values and len(G.graph["backward_order"]) == 1  # not an op
    assert any("torch.autograd.grad" in note and "x.grad" in note for note in G.graph["notes"])
    assert_adds_up(G)


DOUBLE_BACKWARD = """
    import torch

    x = torch.tensor(2.0, requires_grad=True)
    y = x ** 3
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    g.backward()  # x.grad = d(3x²)/dx = 6x = 12
"""


def test_create_graph_is_refused_in_one_sentence_from_the_command_line(tmp_path, capsys):
    path = write(tmp_path, DOUBLE_BACKWARD)
    assert plain_run(path)["x"].grad.item() == 12.0
    out = tmp_path / "double.txt"
    assert main(["render", str(path), "-o", str(out)]) != 0
    assert not out.exists()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "create_graph" in line and "Traceback" not in line


def test_a_gradient_penalty_is_refused_when_its_first_order_graph_is_drawn():
    with capture() as recording:
        x = torch.tensor([1.0, -2.0], requires_grad=True)
        y = (x ** 3).sum()
        (g,) = torch.autograd.grad(y, x, create_graph=True)
        loss = y + (g ** 2).sum()
        loss.backward()
    for root in (y, loss):
        with pytest.raises(TorchImportError, match="create_graph"):
            from_torch(root, names={"x": x, "y": y}, recording=recording)


def test_a_gradient_made_with_create_graph_and_never_differentiated_is_drawn(tmp_path):
    # create_graph=True alone changes no number: the first-order pass is drawn,
    # rooted at what autograd.grad differentiated (y), not at the gradient g.
    path = write(tmp_path, """\
        import torch
        x = torch.tensor(2.0, requires_grad=True)
        y = x ** 3
        (g,) = torch.autograd.grad(y, x, create_graph=True)
        """)
    reference = plain_run(path)
    out = tmp_path / "first.json"
    assert main(["render", str(path), "-o", str(out)]) == 0
    G = from_node_link(json.loads(out.read_text()))
    values = {attrs["label"]: attrs for _, attrs in G.nodes(data=True) if attrs.get("label")}
    assert set(values) == {"x", "y"}
    assert values["x"]["grad"] == reference["g"].item() == 12.0
    assert values["y"]["data"] == reference["y"].item()


# ---------------------------------------------------------------- random graphs, random passes

NUMBERS = [-1.5, -0.5, 0.25, 0.5, 1.0, 2.0]


def random_program(seed: int, keep: bool):
    """A random little graph (scalars or 2-vectors; + − × ** tanh), 1–2 roots, and 1–3
    backward passes from them (retain_graph). ``keep``: retain intermediate gradients,
    as a plain reference run does. Returns the namespace and the last pass's root."""
    rng = random.Random(seed)
    shape = rng.choice([(), (2,)])

    def number():
        return rng.choice(NUMBERS) if shape == () else [rng.choice(NUMBERS) for _ in range(2)]

    names = {}
    values = []
    for i in range(rng.randint(1, 3)):
        values.append(torch.tensor(number(), requires_grad=True))
        names[f"p{i}"] = values[-1]
    made = []
    for i in range(rng.randint(2, 7)):
        a, b = rng.choice(values), rng.choice(values)  # may be the same tensor twice
        kind = rng.randrange(5)
        value = (a + b if kind == 0 else a * b if kind == 1 else a - b if kind == 2
                 else a ** rng.choice([2, 3]) if kind == 3 else torch.tanh(a))
        if keep:
            value.retain_grad()
        values.append(value)
        made.append(value)
        names[f"t{i}"] = value
    roots = []
    for i in range(rng.randint(1, 2)):
        root = rng.choice(made).sum() if shape else rng.choice(made) * 1.0
        if keep:
            root.retain_grad()
        roots.append(root)
        names[f"L{i}"] = root
    passes = [rng.choice(roots) for _ in range(rng.randint(1, 3))]
    for root in passes:
        root.backward(retain_graph=True)
    return names, passes[-1]


@pytest.mark.parametrize("seed", range(40))
def test_random_passes_draw_what_autograd_holds_and_add_up(seed):
    reference, _ = random_program(seed, keep=True)
    with capture() as recording:
        names, root = random_program(seed, keep=False)
    G = from_torch(root, names=names, recording=recording)
    validate(G)
    for _, attrs in G.nodes(data=True):
        if attrs["kind"] != "value" or attrs["role"] == "const":
            continue
        expected = reference[attrs["label"]].grad
        if expected is None:  # a value no pass reached
            assert attrs["grad"] is None, attrs["label"]
            continue
        assert close(attrs["grad"], expected, rel=1e-5), (attrs["label"], seed)
    assert_adds_up(G)


def test_a_micro_batchs_caption_says_passes_add_up_not_a_fork(tmp_path):
    # w is used once per pass: its += comes from the earlier micro-batch, not a fork.
    from backpropviz.captions import step_captions

    path = write(tmp_path, """\
        import torch
        w = torch.tensor([1.0, -2.0], requires_grad=True)
        for x in [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 1.0])]:
            loss = (w * x).sum() ** 2
            loss.backward()
        """)
    rules = [caption.rule for caption in step_captions(graph_of_script(path, quiet=True))]
    assert any("backward passes add to the gradient already there" in rule for rule in rules)
    assert not any("used twice" in rule for rule in rules)
