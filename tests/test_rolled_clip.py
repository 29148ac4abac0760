"""A rolled loop's clip: the block swept once, the loop's back edge drawn with its count,
and a closing step in which the repetitions not drawn send their shares to the shared
weights, whose gradients end as .grad holds them.

The reference is the scalar recurrence of tests/loop_scripts/scalar_loop.py worked
backward by hand below, share by share, in plain Python.
"""

from __future__ import annotations

import math
import os
import pathlib

import pytest

pytest.importorskip("manim")

from in_process import run_cli
from test_caption_arithmetic import false_arithmetic
from test_clip_story import Recorded, dry_played, table_cells, visible_text

from backpropviz.formatting import display_number
from backpropviz.rolling import find_loop, rolled
from backpropviz.script import graph_of_script
from backpropviz.views import drawn_graph

LOOPS = pathlib.Path(__file__).resolve().parent / "loop_scripts"
BENCH_SCRIPTS = pathlib.Path(__file__).resolve().parent.parent / "bench" / "scripts"
W, U, XS = 0.8, -0.6, [0.5, -1.0, 2.0, 0.25, -0.5]  # as scalar_loop.py has them


def shares() -> tuple[list[float], list[float]]:
    """Each repetition's share of ∂loss/∂w and ∂loss/∂u (repetition 1 first), by the
    chain rule worked here: h_t = tanh(w h_{t-1} + u x_t), loss = h_T²."""
    hs = [0.0]
    for x in XS:
        hs.append(math.tanh(W * hs[-1] + U * x))
    g = 2 * hs[-1]
    to_w, to_u = [0.0] * len(XS), [0.0] * len(XS)
    for t in range(len(XS), 0, -1):
        pre = g * (1 - hs[t] ** 2)
        to_w[t - 1], to_u[t - 1] = pre * hs[t - 1], pre * XS[t - 1]
        g = pre * W
    return to_w, to_u


def number(table) -> float:
    (cell,) = [c for row in table_cells(table) for c in row if c]
    return float(cell.replace("−", "-"))


def close(shown: float, want: float) -> bool:
    """``shown`` is ``want`` as a box writes it (4 significant digits)."""
    return display_number(want).replace("−", "-") == f"{shown:g}" or \
        math.isclose(shown, want, rel_tol=6e-4, abs_tol=1e-9)


def told(repetition: int | None = None) -> Recorded:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STEPS", "5")
        G = graph_of_script(LOOPS / "scalar_loop.py", quiet=True)
    H = drawn_graph(rolled(G, find_loop(G), repetition))
    return dry_played(Recorded, H, speed=3.0, phase="backward")


@pytest.fixture(scope="module")
def last():
    return told()


@pytest.fixture
def given(monkeypatch):
    """The graphs handed to render_video, which writes a stand-in file instead (for
    what the command line animates, not how)."""
    import backpropviz.animate as animate

    graphs = []

    def recorded(G, path, **options):
        graphs.append(G)
        pathlib.Path(path).write_bytes(b"clip")
        return pathlib.Path(path)

    monkeypatch.setattr(animate, "render_video", recorded)
    return graphs


def by_label(scene, label):
    return next(node for node, name in scene.graph.nodes(data="label") if name == label)


def test_the_loops_back_edge_is_drawn_dashed_with_its_count(last):
    (loop,) = last.diagram.loops.values()
    assert visible_text(loop.mark) == "⟲×5"
    assert len(loop.dashes.submobjects) >= 6
    # from the block's output h to the box it enters the next repetition as, h_prev
    h, h_prev = (last.diagram.values[by_label(last, name)].frame for name in ("h", "h_prev"))
    start, end = loop.path.get_start(), loop.path.get_end()
    assert abs(start[0] - h.get_center()[0]) < h.width / 2 + 0.1
    assert abs(end[0] - h_prev.get_center()[0]) < h_prev.width / 2 + 0.1


def test_the_closing_step_adds_the_other_repetitions_shares_to_w_and_u(last):
    to_w, to_u = shares()
    w, u = by_label(last, "w"), by_label(last, "u")
    # What w's and u's gradients became, in order: the drawn repetition's share (the
    # last), then, in the closing step, every repetition's sum: .grad.
    became = {}
    for entry in last.record:
        for kind, cells in entry["moved"]:
            if kind == "becomes":
                became.setdefault(entry["step"], []).append(cells)
    closing = max(became)
    assert last.steps[-1].op is None and last.steps[-1].index == closing
    for node, parts in ((w, to_w), (u, to_u)):
        label = number(last.grad_labels[node])
        assert close(label, sum(parts))
    finals = {float(c.replace("−", "-")) for cells in became[closing] for row in cells
              for c in row if c}
    assert any(close(x, sum(to_w)) for x in finals) and any(close(x, sum(to_u)) for x in finals)
    drawn_share = [float(c.replace("−", "-")) for step, tables in became.items()
                   if step != closing for cells in tables for row in cells for c in row if c]
    assert any(close(x, to_w[-1]) for x in drawn_share)
    # the closing step's caption: true as written, every term shown by its end
    caption = last.record[-1]["caption"] if last.record[-1]["step"] == closing else next(
        entry["caption"] for entry in reversed(last.record) if entry["step"] == closing)
    worked = [line for line in caption.text().splitlines() if line.startswith("∂loss/∂")]
    assert len(worked) == 2 and all(false_arithmetic(line) is None for line in worked)
    shown = next(entry["lines"] for entry in reversed(last.record) if entry["step"] == closing)
    assert all(len(terms) == len(line_terms)
               for terms, line_terms in zip(shown, caption.line_terms, strict=True))
    assert [kind for kind, *_ in last.timeline].count("loop") == 2


def test_an_earlier_repetition_starts_with_what_the_later_ones_sent():
    """Drawn at repetition 2: backward reached repetitions 5 to 3 first, so w's and u's
    gradients enter the sweep with their shares, and the closing step adds repetition
    1's."""
    scene = told(1)
    to_w, to_u = shares()
    seed = scene.captions[0]
    assert "repetitions 5 to 3, which backward reached first" in seed.rule
    started = scene.record[0]
    w, u = by_label(scene, "w"), by_label(scene, "u")
    first = next(entry["screen"] for entry in scene.record if entry["step"] is None
                 and display_number(sum(to_w[2:])) in entry["screen"])
    assert display_number(sum(to_u[2:])) in first and started is not None
    assert close(number(scene.grad_labels[w]), sum(to_w))
    assert close(number(scene.grad_labels[u]), sum(to_u))
    # Its title card: what is drawn is repetition 2's h, which is not the loss.
    from backpropviz.animate.cards import title_card
    from backpropviz.animate.mobjects import TextStore
    from backpropviz.style import THEMES

    _, said = title_card(scene.graph, TextStore(), THEMES["light"], 4, backward=True)
    h2 = math.tanh(W * math.tanh(U * XS[0]) + U * XS[1])
    assert f"h = {display_number(h2)}: the backward pass started at a later value" in said
    assert "loss" not in said


def test_a_rolled_loop_is_made_into_a_clip(tmp_path, caplog):
    """... at --speed 4, whose quick beats are shorter than a frame: manim shows them
    for a frame, and its warning of that is not passed on."""
    out = tmp_path / "loop.mp4"
    done = run_cli("render", LOOPS / "scalar_loop.py", "--roll", "--speed", "4", "--phase",
                   "backward", "-o", out,
                   env={**os.environ, "STEPS": "3"}, text=True)
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 0
    subtitles = out.with_suffix(".srt").read_text()
    assert "a loop repeated 3 times, drawn once" in subtitles
    assert "Repetitions 2 and 1, which backward reaches after the drawn one" in subtitles
    assert not [record for record in caplog.records if record.name == "manim"]


def test_a_loop_too_long_to_draw_unrolled_is_animated_rolled(tmp_path, given):
    """400 steps, past the clip's --max-nodes unrolled: its clip is of the loop rolled
    (said in a note), not refused."""
    pytest.importorskip("torch")
    out = tmp_path / "rnn.mp4"
    done = run_cli("render", BENCH_SCRIPTS / "rnn_unrolled.py", "-o", out,
                   env={**os.environ, "STEPS": "400"}, text=True)
    assert done.returncode == 0, done.stderr
    assert "repeats one block 400 times" in done.stderr and "drawn rolled" in done.stderr
    (G,) = given
    assert G.graph["loop_count"] == 400 and out.read_bytes() == b"clip"


def test_the_back_edge_arcs_just_over_the_block_its_count_on_no_box(monkeypatch):
    """dot routes an RNN's back edge high over the whole block (a third of its figure's
    height): the clip lowers it to just over the boxes it spans, its count over it,
    on no box."""
    pytest.importorskip("torch")
    import manim

    from backpropviz.animate.mobjects import LOOP_CLEARANCE
    from backpropviz.animate.sweep import BackpropScene
    from backpropviz.layout import layout

    monkeypatch.setenv("STEPS", "3")
    G = graph_of_script(BENCH_SCRIPTS / "rnn_unrolled.py", quiet=True)
    H = drawn_graph(rolled(G, find_loop(G)))
    with manim.tempconfig({"quality": "low_quality", "verbosity": "WARNING"}):
        scene = BackpropScene(H)
        scene.setup()
    (loop,) = scene.diagram.loops.values()
    boxes = [box.frame for box in scene.diagram.values.values()]
    spanned = [box for box in boxes
               if box.get_right()[0] >= loop.path.get_left()[0]
               and box.get_left()[0] <= loop.path.get_right()[0]]
    highest = max(box.get_top()[1] for box in spanned)
    scale = scene.diagram.scale_factor
    as_dot = max(y for _, y in layout(H).edges[next(iter(scene.diagram.loops))].points)
    assert scene.diagram.point(0, as_dot)[1] > highest + 3 * LOOP_CLEARANCE * scale
    assert highest < loop.path.get_top()[1] <= highest + 1.5 * LOOP_CLEARANCE * scale
    mark = loop.mark
    assert not any(mark.get_left()[0] < box.get_right()[0]
                   and box.get_left()[0] < mark.get_right()[0]
                   and mark.get_bottom()[1] < box.get_top()[1]
                   and box.get_bottom()[1] < mark.get_top()[1] for box in boxes)


def test_the_loops_count_gives_way_to_the_words_of_the_shares(last):
    """In the closing step the words of the shares come where the count is written, the
    count hidden meanwhile (the two were written over each other)."""
    closing = last.steps[-1].index
    screens = [entry["screen"] for entry in last.record if entry["step"] == closing]
    flying = [screen for screen in screens if "⟲4shares" in screen]
    assert flying and not any("⟲×5" in screen for screen in flying)
    assert "⟲×5" in screens[-1]


def test_a_share_that_came_while_the_block_was_swept_is_shown_when_it_is_added():
    """A student's stack-sorted engine sends repetitions 3 to 1's shares of u while it
    sweeps repetition 4's block: u has no gradient on screen until its step, where its
    sum so far comes in, then the drawn share is added to it, the whole sum line shown
    (it showed u's sum so far from the start, and then the line never appeared)."""
    G = graph_of_script(LOOPS / "stack_engine_rnn.py", quiet=True)
    H = drawn_graph(rolled(G, find_loop(G)))
    scene = dry_played(Recorded, H, speed=3.0, phase="backward")
    (u,) = H.graph["loop_arrived"]
    so_far = display_number(H.graph["loop_before"][u])
    (step,) = [done for done in scene.steps if u in done.updated]
    before = [entry["screen"].split(" | ")[0] for entry in scene.record
              if entry["step"] is None or entry["step"] < step.index]
    assert before and not any(so_far in screen for screen in before)
    last = [entry for entry in scene.record if entry["step"] == step.index][-1]
    caption = last["caption"]
    # (the sum line writes its terms with as many digits as they take to add up as written)
    sums = [(i, text.split(" = ")[1].split(" + ")[0]) for i, text in enumerate(caption.line_texts)
            if text.startswith("∂loss/∂u = ") and " + " in text]
    (line, first), = sums
    first = float(first.replace("−", "-"))
    assert first == pytest.approx(H.graph["loop_before"][u], rel=1e-4)
    assert len(last["lines"][line]) == len(caption.line_terms[line])


def test_a_loop_asked_rolled_past_the_clips_limit_is_the_figures_loop(tmp_path, given):
    """--roll on a loop past --max-nodes unrolled: the clip's graph is the figure's (its
    chain of + folded into one, its constants named), and no note says it was rolled
    by itself, as it was asked (found by a trial user: the clip's + chain was not folded,
    and a note said 'drawn rolled, as with --roll' to one who had given --roll)."""
    script = LOOPS / "lecture_rnn_bias.py"
    done = run_cli("render", script, "--roll", "--max-nodes", "30", "-o", tmp_path / "x.mp4",
                   text=True)
    assert done.returncode == 0, done.stderr
    assert "drawn rolled" not in done.stderr
    (clip,) = given
    G = graph_of_script(script, quiet=True)
    figure = drawn_graph(rolled(G, find_loop(G)))
    ops = sorted((attrs["op"], clip.in_degree(node)) for node, attrs in clip.nodes(data=True)
                 if attrs["kind"] == "op")
    assert ("add", 3) in ops
    assert ops == sorted((attrs["op"], figure.in_degree(node))
                         for node, attrs in figure.nodes(data=True) if attrs["kind"] == "op")
