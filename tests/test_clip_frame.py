"""The clip's composition: the graph fills the frame, every box is named as in the figure.

Geometry is read from pixels at 480p: the frame the camera draws while each backward
step is held for reading (as the clip shows it: one clip is rendered and its frames
compared), the graph's non-background box against the frame, the caption band apart
from it, the title card not blank. Names and type sizes are read from the scene's
mobjects.
"""

from __future__ import annotations

import re
from html import unescape

import numpy as np
import pytest

pytest.importorskip("manim")
av = pytest.importorskip("av")

import manim  # noqa: E402

from backpropviz.animate import render_video  # noqa: E402
from backpropviz.animate.screen import TEXT_EM, caption_top  # noqa: E402
from backpropviz.animate.sweep import BackpropScene  # noqa: E402
from backpropviz.figure import to_dot  # noqa: E402
from backpropviz.names import headings  # noqa: E402
from backpropviz.steps import plain_constants  # noqa: E402
from backpropviz.views import drawn_graph  # noqa: E402

EXAMPLES = [("add_mul", "e"), ("fork", "c"), ("d2l_mlp",), ("capstone/forked_neuron",)]
# The clips here are played at twice the speed: the same story, every step and camera
# move, in half the frames (what is read at a step's middle does not depend on its length).
SPEED = 2.0


def dry_run(G, **options) -> BackpropScene:
    from test_clip_story import dry_played

    return dry_played(Steps, G, **options)


class Steps(BackpropScene):
    """A scene that notes, while each backward step is held, the camera's frame and the
    smallest type on screen, and keeps the frame drawn then; and the title card's."""

    def drawn(self) -> np.ndarray:
        """The frame as the camera draws it now, every mobject on screen drawn (the dry
        run draws none)."""
        renderer, camera = self.renderer, self.renderer.camera
        stub, static = camera.__dict__.pop("capture_mobjects"), renderer.static_image
        renderer.static_image = None
        try:
            renderer.update_frame(self)
            return np.array(renderer.get_frame()[..., :3])
        finally:
            camera.capture_mobjects, renderer.static_image = stub, static

    def show_title_card(self) -> None:
        super().show_title_card()
        self.card_drawn = self.drawn()

    def hold(self, start: float) -> None:
        super().hold(start)
        if self.__dict__.get("pace") is None:
            return
        if ("step", start) in {(what, when) for what, _, when in self.timeline}:
            self.__dict__.setdefault("held", []).append((self.time, self.drawn()))
        frame = self.camera.frame
        sizes = [part.em for m in self.mobjects for part in m.get_family()
                 if getattr(part, "em", None) is not None and isinstance(part, manim.Text)
                 and part.get_fill_opacity() > 0.5]
        smallest = min(sizes) / frame.height * 480  # (px at 480p, as on screen now)
        self.__dict__.setdefault("noted", []).append((self.view.zoom <= self.most_zoom + 1e-9,
                                                      smallest))
        # The boxes and circles the frame's edges cut.
        left, right = frame.get_left()[0], frame.get_right()[0]
        bottom, top = frame.get_bottom()[1], frame.get_top()[1]
        parts = [*(box.frame for box in self.diagram.values.values()),
                 *(op.circle for op in self.diagram.ops.values())]
        self.__dict__.setdefault("cut", []).extend(
            part for part in parts
            if not (part.get_right()[0] <= left or part.get_left()[0] >= right)
            and not (left <= part.get_left()[0] and part.get_right()[0] <= right
                     and bottom <= part.get_bottom()[1] and part.get_top()[1] <= top))


def frames_of(path) -> list[tuple[float, np.ndarray]]:
    with av.open(str(path)) as movie:
        return [(frame.time, frame.to_ndarray(format="rgb24"))
                for frame in movie.decode(video=0)]


def frame_at(frames, t: float) -> np.ndarray:
    return min(frames, key=lambda frame: abs(frame[0] - t))[1]


def ink(image: np.ndarray) -> np.ndarray:
    """Where ``image`` is not the white background."""
    return np.any(image < 235, axis=-1)


@pytest.fixture(scope="module")
def stepped(example):
    """``stepped(("fork", "c"))``: the example's story played once (as ``dry_run``) for
    every test here that reads it; none changes it."""
    played: dict[tuple, Steps] = {}

    def play(example_args: tuple) -> Steps:
        if example_args not in played:
            played[example_args] = dry_run(example(*example_args), speed=SPEED)
        return played[example_args]
    return play


@pytest.mark.parametrize("example_args", EXAMPLES, ids=lambda example: example[0])
def test_the_graph_fills_the_frame_while_each_step_is_read(stepped, example_args):
    scene = stepped(example_args)
    assert len(scene.held) == len(scene.steps) > 0
    height, width = scene.held[0][1].shape[:2]
    # The caption band's top, in pixel rows (the band is fixed on screen).
    band = round((0.5 - caption_top(scene.caption_rows) / manim.config.frame_height) * height)
    for when, image in scene.held:
        marked = ink(image)
        # Nothing of the graph runs into the caption band: the rows just above it are
        # empty across the whole frame.
        assert not marked[band - 4:band].any(), when
        graph = marked[:band]
        rows = np.flatnonzero(graph.any(axis=1))
        columns = np.flatnonzero(graph[rows[0] + round(0.1 * height):].any(axis=0))
        # (the title band is the top tenth: the graph is measured under it)
        tall = (rows[-1] - rows[0]) / height
        wide = (columns[-1] - columns[0] + 1) / width
        assert wide >= 0.8 or tall >= 0.7, (when, wide, tall)
        # The caption band holds the caption.
        assert marked[band:].any()


@pytest.mark.parametrize("example_args", EXAMPLES, ids=lambda example: example[0])
def test_the_first_frame_is_the_title_card(stepped, example_args):
    scene = stepped(example_args)
    assert ink(scene.card_drawn).sum() > 500  # the words of the title card, not blank
    assert scene.cues[0][0] == 0 and "=" in scene.cues[0][1].splitlines()[0]
    assert scene.cues[-1][1].startswith("Recap")


@pytest.mark.slow
def test_the_frames_read_here_are_the_clips(example, stepped, tmp_path):
    # The clip itself, rendered: its first frame is the title card, and its last frame
    # of each step's hold is the frame drawn here then (to the video's compression).
    G = example("add_mul", "e")
    out = tmp_path / "clip.mp4"
    render_video(G, out, quality="l", speed=SPEED, progress=False, jobs=1)
    frames, scene = frames_of(out), stepped(("add_mul", "e"))
    period = frames[1][0] - frames[0][0]
    pairs = [(frames[0][1], scene.card_drawn),
             *((frame_at(frames, when - period), image) for when, image in scene.held)]
    for shown, drawn in pairs:
        assert shown.shape == drawn.shape
        # (x264 and its halved colour resolution blur the edges of the coloured text a
        # little: about a quarter of a percent of the pixels cross the ink threshold)
        assert (ink(shown) != ink(drawn)).mean() < 0.005
        assert difference(shown, drawn) < 2
        # and each is nearer its own moment's frame than any other's.
        assert difference(shown, drawn) == min(difference(shown, other) for _, other in pairs)


def difference(one: np.ndarray, other: np.ndarray) -> float:
    """The mean difference of two frames, in levels of 255."""
    return float(np.abs(one.astype(int) - other).mean())


@pytest.mark.parametrize("example_args", EXAMPLES, ids=lambda example: example[0])
def test_type_is_40px_at_1080p_and_no_box_is_cut_in_every_step(stepped, example_args):
    scene = stepped(example_args)
    assert scene.noted
    # Each box is in the frame whole, or not at all, at the middle of every step.
    assert scene.__dict__.get("cut", []) == []
    least = 40 / 1080 * 480
    # Every step whose boxes fit one view at that size shows its type at least that large;
    # only a step whose operand lies far from its op (forked_neuron's x, used at both ends
    # of the graph) is shown zoomed out, smaller.
    assert min(smallest for fits, smallest in scene.noted if fits) >= least - 0.05
    unfit = sum(1 for fits, _ in scene.noted if not fits)
    assert unfit <= (1 if example_args == ("capstone/forked_neuron",) else 0)
    assert TEXT_EM / manim.config.frame_height * 1080 >= 40


def test_a_tensor_graphs_steps_are_read_at_40px_though_one_box_is_tall():
    """nn.Sequential on a batch: its weight and input boxes are taller than the rest,
    and wider than the frame the graph is. Each step is shown at full size, the camera
    as high as the columns it shows (not as the tallest box), no box cut; an input that
    needs no gradient has its matrix centred in its box, inside it."""
    from pathlib import Path

    from backpropviz.script import graph_of_script

    G = graph_of_script(Path(__file__).parent / "torch_scripts" / "sequential.py", quiet=True)
    scene = dry_run(G, speed=SPEED)
    # The steps by the loss at full size; those of the first layer, whose column holds
    # X, the weight and the bias one over the other, as large as that column allows:
    # each half as large again as the whole graph's view would set it.
    least = 40 / 1080 * 480
    sizes = [smallest for _, smallest in scene.noted]
    assert scene.noted[0][0] and scene.noted[1][0] and min(sizes[:2]) >= least - 0.05
    whole = scene.noted[0][1] * scene.most_zoom / scene.whole.zoom
    assert scene.whole.zoom > 2 * scene.most_zoom and min(sizes) > 1.5 * whole
    assert scene.__dict__.get("cut", []) == []
    (x,) = [node for node, label in scene.graph.nodes(data="label") if label == "X"]
    box = scene.diagram.values[x]
    label = box.data_label()
    assert not box.has_gradient_slot
    assert np.allclose(label.get_center()[0], box.frame.get_center()[0])
    assert label.width < box.frame.width


def _figure_headings(G) -> dict:
    """The text heading each value box in the figure's DOT: its label's first row, when
    that is not the box's numbers, without tags or the saved mark."""
    found = {}
    for node, label in re.findall(r'^\s*"([^"]+)" \[id=.*?label=<(<TABLE.*)>\];$', to_dot(G),
                                  flags=re.M):
        first = re.match(r"<TABLE[^>]*><TR><TD[^>]*>(.*?)</TD></TR>", label)
        if G.nodes[node]["kind"] != "value" or first is None \
                or first.group(1).startswith("<TABLE"):
            continue
        text = unescape(re.sub(r"<[^>]+>", "", first.group(1))).replace("\xa0", " ")
        found[node] = text.replace("●", "").strip()
    return found


@pytest.mark.parametrize("example_args", [("d2l_mlp",), ("capstone/forked_neuron",)],
                         ids=lambda example: example[0])
def test_every_box_is_named_as_in_the_figure_and_constants_have_no_slot(example, example_args):
    G = drawn_graph(example(*example_args))
    with manim.tempconfig({"quality": "low_quality", "verbosity": "WARNING"}):
        scene = BackpropScene(G)
        scene.setup()
    boxes = scene.diagram.values
    shown = {node: box.name.plain for node, box in boxes.items() if box.name is not None}
    # The same naming layer as the figure: every box the figure heads, headed alike.
    assert shown == {node: heading.text for node, heading in headings(G).items()}
    assert shown == _figure_headings(G)
    if example_args == ("d2l_mlp",):
        assert {"o − y", "(o − y)²", "W1", "x"} <= set(shown.values())
    # A constant (no gradient) is drawn with its value alone: no slot, no rule.
    constants = plain_constants(G, False)
    for node, box in boxes.items():
        assert box.has_gradient_slot == (node not in constants)
        assert (box.rule is None) or node not in constants
        # ... and centred in its box, though the engine gave it a gradient; every
        # value's numbers inside its box.
        label = box.data_label()
        if node in constants:
            assert np.isclose(label.get_center()[0], box.frame.get_center()[0])
        assert box.frame.get_left()[0] < label.get_left()[0]
        assert label.get_right()[0] < box.frame.get_right()[0]


def test_no_memory_meter_unless_asked(example, stepped):
    G = example("add_mul", "e")
    assert stepped(("add_mul", "e")).meter_shown == []
    assert dry_run(G, memory=True).meter_shown == [0, 16, 16, 0, 0]


def test_the_recaps_lessons_are_read_from_the_graph(example):
    from backpropviz import Value
    from backpropviz.animate.cards import lessons
    from backpropviz.ir import to_networkx

    def taught(G) -> set[str]:
        return {lesson.split(":")[0] for lesson in lessons(G)}

    chain = "each gradient is the local derivative × the gradient from above"
    assert lessons(example("add_mul", "e")) == [chain]
    assert taught(example("fork", "c")) == {chain.split(":")[0], "forks add"}
    assert taught(example("d2l_mlp")) == {chain.split(":")[0], "a dead ReLU zeros a row"}
    # With the book's penalty, W₁ still gets its share in the dead unit's row: the lesson
    # says the weights get none *through* the unit, which is true as written.
    from backpropviz import Tensor

    x = Tensor([1.0, 2.0])
    W1 = Tensor([[1.0, -1.0], [0.0, 1.0]], requires_grad=True)
    W2 = Tensor([[2.0, -1.0]], requires_grad=True)
    W1.label, W2.label = "W1", "W2"
    J = ((W2 @ (W1 @ x).relu()) ** 2).sum() / 2 + ((W1 ** 2).sum() + (W2 ** 2).sum()) * 0.05
    J.backward()
    G = to_networkx(J)
    (relu,) = [attrs for _, attrs in G.nodes(data=True) if attrs.get("op") == "relu"]
    (W1,) = [attrs for _, attrs in G.nodes(data=True) if attrs.get("label") == "W1"]
    dead_rows = np.asarray(W1["grad"])[np.asarray(relu["dead"], dtype=bool).reshape(-1)]
    assert np.all(dead_rows != 0)
    (said,) = [lesson for lesson in lessons(G) if lesson.startswith("a dead ReLU")]
    assert said.endswith("so the weights that feed it get none through it")
    # The student's engine overwrote at its forks: the recap says so, and names every
    # gradient that is not the chain rule's, as backpropviz check grades them (not only
    # x and h, where it went wrong: w, b and the rest got their wrong shares from them).
    from pathlib import Path

    from backpropviz.check import check_script

    said = lessons(example("capstone/forked_neuron"))
    (fork,) = [lesson for lesson in said if lesson.startswith("forks add")]
    assert fork.endswith("; this engine did not add them")
    (off,) = [lesson for lesson in said if lesson.startswith("this engine's backward")]
    listed = re.fullmatch(r"this engine's backward is not the chain rule: the gradients of "
                          r"(.*) are not what the chain rule gives", off)[1]
    graded = check_script(Path(__file__).resolve().parent.parent / "examples" / "capstone"
                          / "forked_neuron.py")
    assert sorted(re.split(r", | and ", listed)) == sorted(wrong.name for wrong in graded.wrong)
    # A right engine's recap says no such thing.
    assert not any(lesson.startswith("this engine's") for lesson in lessons(example("fork")))
    # Any graph with a value used twice, whatever it is called, and none without.
    u = Value(3.0, label="u")
    v = u * u
    v.backward()
    assert "forks add" in taught(to_networkx(v))
    w = Value(3.0, label="fork") * Value(2.0, label="relu")
    w.backward()
    assert taught(to_networkx(w)) == {chain.split(":")[0]}


BATCH_RELU = """
import torch
from torch import nn
x = torch.tensor([[1.0, -0.5], [0.2, 0.8], [-1.0, 0.3]])
layer = nn.Linear(2, 3)
with torch.no_grad():
    layer.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 1.0]]))
    layer.bias.zero_()
loss = torch.relu(layer(x)).sum()
loss.backward()
"""


def test_on_a_batch_a_dead_relu_is_said_as_it_is(tmp_path):
    """A batch of three whose examples die at different units: the weights get gradient
    from the examples where the unit lived, so no row is zeroed, and the recap must not
    say one is; the note under the ReLU says which example's units are dead."""
    from backpropviz.animate.cards import lessons
    from backpropviz.animate.motion import dead_where
    from backpropviz.script import graph_of_script

    script = tmp_path / "batch_relu.py"
    script.write_text(BATCH_RELU)
    G = graph_of_script(script, quiet=True)
    (weight,) = [attrs["grad"] for _, attrs in G.nodes(data=True)
                 if attrs.get("label") == "layer.weight"]
    assert np.all(np.abs(weight).sum(axis=1) > 0)  # (every row learns: none zeroed)
    said = " ".join(lessons(G))
    assert "zeros a row" not in said and "still learns from the others" in said
    (dead,) = [np.asarray(attrs["dead"], dtype=bool) for _, attrs in G.nodes(data=True)
               if attrs.get("kind") == "op" and np.any(attrs.get("dead", False))]
    # x W^T: [1, −0.5, −1.5], [0.2, 0.8, 0.6], [−1, 0.3, 1.3]: dead where ≤ 0.
    assert dead.tolist() == [[False, True, True], [False, False, False],
                             [True, False, False]]
    assert dead_where(dead) == "dead example 1: unit 2, 3; example 3: unit 1"
    assert dead_where(np.array([[True, False], [True, False]])) == \
        "dead unit 1 for every example"
    assert dead_where(np.array([False, True, True])) == "dead unit 2, 3"
    many = np.zeros((5, 2), dtype=bool)
    many[:4, 0] = True
    assert dead_where(many) == "dead in 4 of 10 entries"



@pytest.mark.parametrize("args", [("add_mul", "e"), ("d2l_mlp",)])
def test_the_recap_fills_the_frame_in_type_of_40px_and_more(example, args):
    # It was set in the cards' type whatever its length: add_mul's, a line of results
    # and one lesson, took the middle two fifths of the frame's height.
    scene = dry_run(example(*args), phase="backward")
    card, frame = scene.recap, scene.camera.frame
    assert frame.get_left()[0] <= card.get_left()[0] <= card.get_right()[0] \
        <= frame.get_right()[0]
    assert frame.get_bottom()[1] <= card.get_bottom()[1] <= card.get_top()[1] \
        <= frame.get_top()[1]
    assert card.height >= 0.55 * frame.height
    # Its lessons' rows, each a line of text with ascenders and descenders (about an
    # em tall), at 1080p.
    rows = [part for part in card[-1].get_family() if isinstance(part, manim.Text)
            and part.text.strip() != "•"]
    assert rows and min(row.height for row in rows) / frame.height * 1080 >= 40


def test_a_recap_too_tall_for_the_cards_type_is_set_smaller_not_cut():
    """Four 6×2 weights' gradients and two lessons (a GRU cell's recap) are taller than
    the frame in the cards' type: the recap is set smaller, whole inside the frame."""
    from backpropviz import Tensor
    from backpropviz.ir import to_networkx

    rng = np.random.default_rng(0)
    x = Tensor(rng.normal(size=(2, 1)), label="x")
    weights = [Tensor(rng.normal(size=(6, 2)), label=f"W{i}", requires_grad=True)
               for i in range(4)]
    h = (weights[0] @ x).relu()
    for w in weights[1:]:
        h = h + (w @ x).relu()
    loss = (h * h).sum()
    loss.backward()
    from backpropviz.animate.cards import recap_card

    with manim.tempconfig({"quality": "low_quality", "verbosity": "WARNING"}):
        scene = BackpropScene(to_networkx(loss))
        scene.setup()
        card, _, _ = recap_card(scene.graph, scene.store, scene.palette, scene.results,
                                scene.precision, scene.dead_values)
        # (placed at the frame's centre, in screen units)
        assert card.height <= manim.config.frame_height
        assert card.width <= manim.config.frame_width


def test_the_recap_of_a_hand_written_engine_lists_its_named_inputs_not_its_numbers():
    """A student's engine has no parameters, only inputs: the numbers it wrapped in its
    Value (x, h0) are inputs too. The recap lists the named ones, w, u and b, not
    ∂loss/∂0.3 (found by a trial user)."""
    from pathlib import Path

    from backpropviz.animate.screen import parameter_results
    from backpropviz.script import graph_of_script

    G = graph_of_script(Path(__file__).parent / "loop_scripts" / "lecture_rnn_bias.py",
                        quiet=True)
    assert [text for _, _, text in parameter_results(G)] == \
        ["∂loss/∂w =", "∂loss/∂u =", "∂loss/∂b ="]


@pytest.mark.parametrize("computed", [
    "o = (x * w + b).tanh()\no.label = 'o'\nL = o * 1.0",
    # (a fork, and a sum of three folded into one +, which the reference has no rule for)
    "n = x * w + x2 * w + b\nn.label = 'n'\no = n.tanh()\no.label = 'o'\nL = o * o + n"])
def test_a_wrong_rule_is_not_called_the_chain_rule_on_the_cards(tmp_path, computed):
    """A student's tanh differentiated as 1 − t: its gradients are the engine's, and
    the cards say so (the title card had promised them 'by the chain rule', and the
    recap listed them with no word that they are not), naming those check grades wrong;
    at a fork, the engine that adds is not said to have failed to add."""
    from pathlib import Path

    from backpropviz.animate.cards import lessons, title_card
    from backpropviz.animate.mobjects import TextStore
    from backpropviz.check import check_script
    from backpropviz.names import value_names
    from backpropviz.script import graph_of_script
    from backpropviz.style import THEMES

    engines = Path(__file__).resolve().parent / "engines"
    script = tmp_path / "wrong_tanh.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(engines)!r})\nimport students\n"
                      "Value = students.WrongTanh\nx = Value(2.0, label='x')\n"
                      "x2 = Value(0.5, label='x2')\nw = Value(-0.5, label='w')\n"
                      f"b = Value(0.3, label='b')\n{computed}\nL.label = 'L'\nL.backward()\n")
    G = graph_of_script(script, quiet=True)
    said = lessons(G)
    assert not any("did not add" in lesson for lesson in said)
    (off,) = [lesson for lesson in said if lesson.startswith("this engine's backward")]
    listed = re.fullmatch(r"this engine's backward is not the chain rule: the gradients of "
                          r"(.*) are not what the chain rule gives", off)[1]
    names = re.split(r", | and ", listed)
    more = int(names.pop()[:-5]) if names[-1].endswith(" more") else 0
    drawn = {name.text for name in value_names(G).values()}
    graded = [wrong.name for wrong in check_script(script).wrong if wrong.name in drawn]
    assert set(names) <= set(graded) and len(names) + more == len(graded)
    _, words = title_card(G, TextStore(), THEMES["light"], 4, backward=True)
    assert "by this engine's backward pass" in words and "chain rule" not in words


def test_a_view_set_by_the_graphs_height_shows_every_column_it_can():
    """A neuron's graph (four inputs stacked) is taller than the room: every view of it
    is zoomed out alike by that height. The view for its first columns is then the one
    with the most columns at that zoom, the graph centred, rather than one that keeps
    the other columns out and leaves half the frame empty (as micrograd's neuron was)."""
    from backpropviz.animate.camera import Room, view_of

    cols = [(-7.35, -5.76), (-5.02, -4.24), (-3.5, -1.49), (-0.75, 0.03), (0.77, 2.96),
            (3.7, 4.72), (5.46, 7.35)]
    heights = [(-3.9, 3.6)] * len(cols)  # (taller than the room: a zoom of 1.5)
    room = Room(-6.8, 6.8, -2.1, 3.24)
    view = view_of(cols, (0, 2), heights, room, 14.22, 1.0, 0.5, None)
    assert (view.first, view.last) == (0, len(cols) - 1)
    assert view.zoom == pytest.approx((3.6 + 3.9) / room.height)
    half = view.zoom * 14.22 / 2  # (the graph's middle in the frame's, both sides in it)
    assert view.x - half < cols[0][0] and cols[-1][1] < view.x + half
    assert view.x == pytest.approx(-view.zoom * (room.left + room.right) / 2, abs=1e-9)


def test_a_step_between_tables_wider_than_the_frame_is_read_a_share_at_a_time():
    """An MLP on a batch of 8 at module level: the hidden layer's 8×32 boxes are each wider
    than the frame at a size one reads, so no view holds a module with its operand and
    its result. The camera shows the module with its result, then follows each share out
    to its operand, its smallest text at least 20 px at 1080p (a caption's is 40); it had
    shown the whole graph at each of these steps, its smallest text 7 px."""
    from pathlib import Path

    from backpropviz.script import graph_of_script

    G = drawn_graph(graph_of_script(Path(__file__).parent / "torch_scripts" / "wide_batch.py",
                                    quiet=True), modules=True)
    scene = dry_run(G, speed=SPEED, phase="backward")
    least = 40 / 1080 * 480  # (px at 480p: TEXT_EM, what the clip sets its words at)
    whole = least * scene.most_zoom / scene.whole.zoom
    assert scene.whole.zoom > 4 * scene.most_zoom  # (the whole graph: too small to read)
    sizes = [smallest for _, smallest in scene.noted]
    assert len(sizes) == len(scene.steps) + 1  # (and the seed's)
    assert min(sizes) >= 0.45 * least > 2.5 * whole
    assert scene.__dict__.get("cut", []) == []
