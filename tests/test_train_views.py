"""A training run's figure, page and clip: the numbers they show are the run's, pass by pass.

The runs here are made in the test, by a small training loop of our engine run
in-process (not by backpropviz's recorder): each pass's IR is built right
after backward, before the update changes the parameters, and each
parameter's value before, gradient and value after the SGD step are noted as
the loop holds them. The expected numbers are then the loop's own floats.
"""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from backpropviz import Tensor, Value
from backpropviz.formatting import display_number
from backpropviz.options import Options
from backpropviz.script import as_graph
from backpropviz.train_figure import render_training_figure
from backpropviz.training import Iteration, Run, Update

SVG = "{http://www.w3.org/2000/svg}"


# ---------------------------------------------------------------- runs made here


def neuron_run(passes: int = 5, rate: float = 0.1, *, momentum: float | None = None) -> Run:
    """A neuron w·x + b fitted to one point, (w·x + b − 3)², by SGD (or, given
    ``momentum``, by SGD with momentum, whose rate cannot be read off)."""
    w = Value(2.0, label="w", requires_grad=True)
    b = Value(0.5, label="b", requires_grad=True)
    velocity = {"w": 0.0, "b": 0.0}
    iterations = []
    for index in range(passes):
        x = Value(1.5, label="x")
        loss = (w * x + b - 3.0) ** 2
        loss.backward()
        graph = as_graph(loss)  # before the update: the values this pass used
        updates = {}
        for name, p in (("w", w), ("b", b)):
            before, grad = p.data, p.grad
            if momentum is None:
                p.data -= rate * grad
            else:
                velocity[name] = momentum * velocity[name] + grad
                p.data -= rate * velocity[name]
            updates[name] = Update(before, grad, p.data, rate if momentum is None else None)
            p.grad = 0.0
        iterations.append(Iteration(index, loss.data, graph, updates))
    return Run(iterations, total=passes)


def sgd_run(parameters: dict[str, Tensor], loss, passes: int, rate: float) -> Run:
    """``loss()`` (of the ``parameters``, by name) trained by SGD for ``passes`` passes, as
    the recorder records a loop: each pass's graph, loss and updates."""
    iterations = []
    for index in range(passes):
        L = loss()
        L.backward()
        graph = as_graph(L)
        updates = {}
        for name, p in parameters.items():
            before, grad = p.data.tolist(), p.grad.tolist()
            p.data = p.data - rate * p.grad
            updates[name] = Update(before, grad, p.data.tolist(), rate)
            p.zero_grad()
        iterations.append(Iteration(index, float(L.data), graph, updates))
    return Run(iterations, total=passes)


def _point() -> Tensor:
    """The one input, made anew each pass (as a loop over data makes it)."""
    return Tensor([1.0, 2.0], label="x")


def matrix_run(passes: int = 4, rate: float = 0.05) -> Run:
    """The book's MLP (W1 2×2, W2 1×2, ReLU, L = ½(o − y)²) trained by SGD on one point."""
    W1 = Tensor([[1.0, -1.0], [0.0, 1.0]], label="W1", requires_grad=True)
    W2 = Tensor([[2.0, -1.0]], label="W2", requires_grad=True)
    return sgd_run({"W1": W1, "W2": W2},
                   lambda: ((W2 @ (W1 @ _point()).relu() - 1.0) ** 2).sum() / 2, passes, rate)


# ---------------------------------------------------------------- the figure


def _svg(path) -> ET.Element:
    return ET.parse(path).getroot()


def _panels(root: ET.Element) -> list[dict]:
    """Each panel of the figure read back: its title, its ticks (value, y), its points
    (iteration, y, the number in data-value) and the numbers written beside them."""
    panels: list[dict] = []
    for element in root.iter():
        cls = element.get("class", "")
        if cls == "panel-title":
            panels.append({"title": "".join(element.itertext()), "ticks": [], "points": [],
                           "labels": []})
        elif cls == "tick-y":
            text = element.text.replace("\u2212", "-")
            panels[-1]["ticks"].append((float(text), float(element.get("data-y"))))
        elif cls.startswith("point"):
            panels[-1]["points"].append((int(element.get("data-iteration")),
                                         float(element.get("cy")),
                                         float(element.get("data-value")), "after" in cls))
        elif cls == "value-label":
            panels[-1]["labels"].append(element.text)
    return panels


def _value_at(ticks: list[tuple[float, float]], y: float) -> float:
    """The value a height stands for on a panel's axis, from two of its tick labels."""
    (v0, y0), (v1, y1) = ticks[0], ticks[-1]
    return v0 + (y - y0) * (v1 - v0) / (y1 - y0)


def test_the_figure_draws_the_runs_losses_and_parameters(tmp_path):
    run = neuron_run()
    path = render_training_figure(run, tmp_path / "run.svg", Options())
    panels = _panels(_svg(path))
    assert [p["title"] for p in panels] == ["loss", "w", "b"]
    loss, w, b = panels
    # Each point stands, on its panel's axis, for the loop's number (to half a pixel).
    losses = [it.loss for it in run.iterations]
    assert [value for _, _, value, _ in loss["points"]] == losses
    for (_, y, value, _), ticks in ((p, loss["ticks"]) for p in loss["points"]):
        assert _value_at(ticks, y) == pytest.approx(value, abs=_pixel(ticks) / 2)
    for name, panel in (("w", w), ("b", b)):
        used = [it.parameters[name].before for it in run.iterations]
        left = run.iterations[-1].parameters[name].after
        assert [(i, v, after) for i, _, v, after in panel["points"]] == \
            [*((i, v, False) for i, v in enumerate(used)), (len(used), left, True)]
        for _, y, value, _ in panel["points"]:
            assert _value_at(panel["ticks"], y) == pytest.approx(
                value, abs=_pixel(panel["ticks"]) / 2)
        # The numbers written: the first value used and the one the last update left.
        assert panel["labels"] == [display_number(used[0]), display_number(left)]
    assert loss["labels"] == [display_number(losses[0]), display_number(losses[-1])]
    # And the loss falls, as SGD on this convex loss makes it.
    assert losses == sorted(losses, reverse=True)


def _pixel(ticks: list[tuple[float, float]]) -> float:
    """How much value one pixel of a panel's height stands for."""
    (v0, y0), (v1, y1) = ticks[0], ticks[-1]
    return abs((v1 - v0) / (y1 - y0))


def test_a_matrix_parameter_is_drawn_entry_by_entry(tmp_path):
    run = matrix_run()
    panels = _panels(_svg(render_training_figure(run, tmp_path / "m.svg", Options())))
    by_title = {p["title"]: p for p in panels}
    assert set(by_title) == {"loss", "W1, each entry", "W2, each entry"}
    W1 = by_title["W1, each entry"]
    entries = np.array([np.ravel(it.parameters["W1"].before) for it in run.iterations])
    drawn = [value for _, _, value, after in W1["points"] if not after]
    # One line per entry, entry by entry, each through the values the passes used.
    assert drawn == [float(x) for x in entries.T.ravel()]
    assert [value for *_, value, after in W1["points"] if after] == \
        list(np.ravel(run.iterations[-1].parameters["W1"].after))


def test_every_number_is_at_least_28_px_on_the_slide_and_the_png_is_one(tmp_path):
    run = neuron_run()
    root = _svg(render_training_figure(run, tmp_path / "run.svg", Options(theme="dark")))
    assert (root.get("width"), root.get("height")) == ("1920", "1080")
    sizes = [float(t.get("font-size")) for t in root.iter(f"{SVG}text")
             if re.fullmatch(r"[−\d.e+]+", t.text or "")]
    assert sizes and min(sizes) >= 28
    png = render_training_figure(run, tmp_path / "run.png", Options())
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert render_training_figure(run, tmp_path / "run.pdf", Options()).read_bytes()[:4] == \
        b"%PDF"


def test_an_empty_run_is_refused_in_a_sentence_and_leaves_no_file(tmp_path):
    from backpropviz.errors import DrawError

    with pytest.raises(DrawError, match="kept no backward pass"):
        render_training_figure(Run([]), tmp_path / "none.svg", Options())
    assert list(tmp_path.iterdir()) == []


def test_memory_across_the_loop_is_a_flat_line_of_the_hand_counted_peak(tmp_path):
    from backpropviz.train_figure import render_training_memory

    run = neuron_run(4)
    root = _svg(render_training_memory(run, tmp_path / "peaks.svg", Options()))
    # Each pass keeps w and x for × and (w·x + b − 3) for the square: three float64s.
    peaks = [float(c.get("data-bytes")) for c in root.iter(f"{SVG}circle")]
    assert peaks == [3 * 8] * 4
    one = _svg(render_training_memory(run, tmp_path / "pass2.svg", Options(), iteration=2))
    assert "pass 2" in "".join(one.itertext())
    assert max(int(g.get("data-bytes")) for g in one.iter(f"{SVG}g")
               if g.get("data-bytes")) == 24
    from backpropviz.errors import DrawError

    with pytest.raises(DrawError, match=r"kept no pass 7 \(it kept \[0, 1, 2, 3\]\)"):
        render_training_memory(run, tmp_path / "none.svg", Options(), iteration=7)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pass2.svg", "peaks.svg"]


# ---------------------------------------------------------------- the page in Chromium

MOMENT = """() => {
  const root = document.getElementById('bpv');
  const now = document.querySelector('#loss-curve .loss-point.now');
  return {iter: Number(root.dataset.iter), step: Number(root.dataset.step), hash: location.hash,
          caption: document.getElementById('caption').textContent,
          rule: document.getElementById('rule').textContent,
          marked: now && [Number(now.dataset.iteration), Number(now.dataset.value)],
          labels: [...document.querySelectorAll('#stage .update-label')].map(
            g => [g.dataset.node, g.textContent]),
          started: [...document.querySelectorAll('#stage g.node.started')].map(g => g.id)};
}"""

# The numbers written in a value box in the forward values' colour (its data, not its
# gradient), in order.
BOX_NUMBERS = """([id, color]) => [...document.getElementById(id).querySelectorAll('text')]
  .filter(t => t.getAttribute('fill') === color && /^[−\\d.e]+$/.test(t.textContent.trim()))
  .map(t => t.textContent.trim())"""


def _open(chromium, tmp_path, run, moment="", *, theme="light"):
    from backpropviz.train_page import render_training_page

    path = render_training_page(run, tmp_path / f"run-{theme}.html", Options(theme=theme))
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    requests, errors = [], []
    page.on("request", lambda request: requests.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri() + moment)
    return page, path, requests, errors


def _steps(run: Run, k: int) -> int:
    """The update's step in pass k: one after its last backward step (one per op)."""
    ops = sum(1 for _, attrs in run.iterations[k].graph.nodes(data=True) if attrs["kind"] == "op")
    return ops + 1


def test_the_pass_control_and_its_keys_move_between_passes_keeping_the_step(browser, tmp_path):
    run = neuron_run()
    page, path, requests, errors = _open(browser, tmp_path, run)
    assert page.evaluate(MOMENT)["marked"] == [0, run.iterations[0].loss]
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    for key, want in (("PageDown", 1), ("]", 2), ("]", 3), ("PageUp", 2), ("[", 1)):
        page.keyboard.press(key)
        moment = page.evaluate(MOMENT)
        assert (moment["iter"], moment["step"], moment["hash"]) == (want, 2, f"#iter={want}&step=2")
        # The loss curve marks the pass shown, at the loop's loss of that pass.
        assert moment["marked"] == [want, run.iterations[want].loss]
    page.click("#next-iter")
    assert page.evaluate(MOMENT)["iter"] == 2
    page.fill("#iteration", "4")
    assert page.evaluate(MOMENT)["iter"] == 4
    page.click("#loss-curve #loss-point-0")
    assert page.evaluate(MOMENT)["iter"] == 0
    assert requests == [path.as_uri()] and errors == []


def test_each_passs_picture_is_fitted_to_the_stage_at_every_step(browser, tmp_path):
    """The whole drawing on the stage, however long the step's caption (the update's
    runs to two lines): the training page fits each picture to the stage itself, and
    the stage keeps its size from step to step and pass to pass (the caption's room is
    held at the tallest caption's: the update's two lines had shrunk it)."""
    run = neuron_run()
    page, _, _, errors = _open(browser, tmp_path, run)
    stages = set()
    for step in range(_steps(run, 0) + _steps(run, 1) + 2):  # (pass 0, then pass 1)
        if step:
            page.keyboard.press("ArrowRight")
        placed = page.evaluate("""() => {
          const box = (e) => { const r = e.getBoundingClientRect();
                               return [r.left, r.top, r.right, r.bottom]; };
          return {stage: box(document.getElementById('stage')),
                  drawn: box(document.querySelector('#stage svg > g'))};
        }""")
        (sl, st, sr, sb), (dl, dt, dr, db) = placed["stage"], placed["drawn"]
        assert sl - 1 <= dl and dr <= sr + 1 and st - 1 <= dt and db <= sb + 1, step
        assert dr - dl >= 0.9 * (sr - sl) or db - dt >= 0.9 * (sb - st), step  # (filled)
        stages.add(tuple(placed["stage"]))
    assert page.evaluate(MOMENT)["iter"] == 1
    assert len(stages) == 1
    assert errors == []


UPDATE = re.compile(r"(\w+) ← \1 − η·∂L/∂\1 = (\S+) − (\S+) · (\S+) ([=≈]) (\S+)")


def _number(text: str) -> float:
    return float(text.strip("()").replace("\u2212", "-"))


def _half_unit(text: str) -> float:
    """Half a unit in the last digit written: how far the number shown may be from its own."""
    mantissa = text.strip("()").replace("\u2212", "").split("e")[0]
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    exponent = int(text.split("e")[1].replace("\u2212", "-")) if "e" in text else 0
    return 0.5 * 10.0 ** (exponent - decimals)


def test_the_update_step_shows_the_runs_numbers_and_its_arithmetic_is_true(browser, tmp_path):
    run = neuron_run()
    for k in (0, 3):
        page, _, _, errors = _open(browser, tmp_path, run, f"#iter={k}&step={_steps(run, k)}")
        moment = page.evaluate(MOMENT)
        assert (moment["iter"], moment["step"]) == (k, _steps(run, k))
        lines = moment["caption"].split("\n")
        assert len(lines) == 2
        for line, (name, update) in zip(lines, run.iterations[k].parameters.items(), strict=True):
            found = UPDATE.fullmatch(line)
            assert found, line
            assert found[1] == name
            before, rate, grad, sign, after = found.groups()[1:]
            # The numbers are the loop's, as drawn (w and its gradient with more digits
            # where the four drawn would not give the new w: they round to those)...
            def digits(text: str) -> int:
                return len(text.strip("()").lstrip("−").replace(".", "").lstrip("0"))

            assert [before, rate, grad.strip("()"), after] == [
                display_number(update.before, digits(before)), display_number(0.1),
                display_number(update.grad, digits(grad)), display_number(update.after)]
            # ... and a student redoing the arithmetic as written gets the new w written:
            # exactly where it says =
            worked = _number(before) - _number(rate) * _number(grad)
            assert display_number(worked) == after, line
            assert (sign == "=") == math.isclose(worked, _number(after), rel_tol=1e-9), line
        # Each parameter's box carries its line in the drawing.
        by_node = dict(moment["labels"])
        assert sorted(by_node.values()) == sorted(lines)
        assert errors == []


def test_the_next_pass_starts_from_the_value_the_update_left(browser, tmp_path):
    run = neuron_run()
    k = 1
    page, _, _, errors = _open(browser, tmp_path, run, f"#iter={k}&step={_steps(run, k)}")
    nodes = dict(page.evaluate(MOMENT)["labels"])  # node id -> its update line
    page.keyboard.press("ArrowRight")
    moment = page.evaluate(MOMENT)
    assert (moment["iter"], moment["step"]) == (k + 1, 0)
    assert sorted(moment["started"]) == sorted(nodes)
    for node, line in nodes.items():
        name = line.split(" ")[0]
        after = run.iterations[k].parameters[name].after
        assert after == run.iterations[k + 1].parameters[name].before  # the loop's own fact
        assert page.evaluate(BOX_NUMBERS, [node, "#000000"]) == [display_number(after)]
        assert f"{name} = {display_number(after)}" in moment["rule"]
    page.keyboard.press("ArrowLeft")  # back over the pass boundary, to the update
    assert page.evaluate(MOMENT)["step"] == _steps(run, k)
    assert errors == []


def test_a_link_restores_its_moment_and_back_returns(browser, tmp_path):
    run = matrix_run()
    page, _, _, errors = _open(browser, tmp_path, run, theme="dark")
    for _ in range(_steps(run, 0) + 1 + 3):  # through pass 0 and its update, into pass 1
        page.keyboard.press("ArrowRight")
    reached = page.evaluate(MOMENT)
    assert (reached["iter"], reached["step"], reached["hash"]) == (1, 3, "#iter=1&step=3")
    linked, _, _, more_errors = _open(browser, tmp_path, run, "#iter=1&step=3", theme="dark")
    assert linked.evaluate(MOMENT) == reached
    page.go_back()
    assert page.evaluate(MOMENT)["hash"] == "#iter=1&step=2"
    assert errors == more_errors == []


def test_an_optimizer_without_a_rate_shows_before_and_after(browser, tmp_path):
    run = neuron_run(momentum=0.9)
    k = 2
    page, _, _, errors = _open(browser, tmp_path, run, f"#iter={k}&step={_steps(run, k)}")
    lines = page.evaluate(MOMENT)["caption"].split("\n")
    assert lines == [f"{name}: {display_number(u.before)} → {display_number(u.after)}"
                     for name, u in run.iterations[k].parameters.items()]
    # With momentum the step is not the rate times this gradient: no η to read off.
    u = run.iterations[k].parameters["w"]
    assert u.after != pytest.approx(u.before - 0.1 * u.grad)
    assert errors == []


# ---------------------------------------------------------------- the clip


def _story(run: Run):
    """The clip's whole story played without drawing a frame (as tests/test_animate.py
    runs its dry runs)."""
    pytest.importorskip("manim")
    from backpropviz.animate.training import TrainingScene
    from tests.test_animate import dry_run

    return dry_run(run, TrainingScene)


def test_the_clip_tells_every_pass_with_the_runs_numbers():
    run = neuron_run(3)  # the first pass told in full, then two at speed (a middle, the last)
    scene = _story(run)
    # Each update turns each parameter's box into the value the loop left in it...
    assert [k for k, _ in scene.updates_shown] == [0, 1, 2]
    for k, shown in scene.updates_shown:
        assert shown == {name: [[display_number(u.after).replace("\u2212", "-")]]
                         for name, u in run.iterations[k].parameters.items()}
    # ... and each later pass's boxes show that pass's own forward values, the
    # parameters' being where the update before left them.
    names = {attrs["label"]: node for node, attrs in run.iterations[0].graph.nodes(data=True)
             if attrs.get("label")}
    for k, values in scene.values_shown:
        for name in run.iterations[k].parameters:
            assert values[names[name]] == [[display_number(
                run.iterations[k - 1].parameters[name].after).replace("\u2212", "-")]]
        assert values[scene.graph.graph["roots"][0]] == [[display_number(
            run.iterations[k].loss).replace("\u2212", "-")]]
    assert [k for k, _ in scene.values_shown] == [1, 2]
    # The loss curve grows one point a pass, the loop's losses.
    assert scene.loss_points == [it.loss for it in run.iterations]
    # The subtitles say each update with its numbers.
    cues = [text for _, text in scene.cues]
    said = [found for cue in cues for line in cue.split("\n")
            if (found := UPDATE.fullmatch(line)) and found[1] == "w"]
    for iteration in run.iterations:
        w = iteration.parameters["w"]
        assert any(math.isclose(_number(found[2]), w.before, rel_tol=1e-3)
                   and _number(found[4]) == pytest.approx(w.grad, rel=1e-3)
                   and found[6] == display_number(w.after) for found in said)


def test_every_pass_at_speed_is_held_until_its_captions_can_be_read():
    """What a pass at speed starts from, and its update's arithmetic, stay on screen as
    long as the first pass's do: until they can be read (an update of two vectors' lines
    had stayed 1.6 s)."""
    from backpropviz.animate.pacing import reading_time

    scene = _story(neuron_run(3))
    cues = [*scene.cues, (scene.time, "")]
    held = [(text, after - start) for (start, text), (after, _) in itertools.pairwise(cues)]
    told = [(text, seconds) for text, seconds in held
            if text.startswith(("Pass ", "w ←", "each parameter"))]
    assert len(told) >= 4  # (two passes at speed, each its start and its update)
    for text, seconds in told:
        assert seconds >= reading_time(text) - 1e-3, text


def test_the_first_updates_caption_lies_under_every_box_it_updates():
    """The update's lines are set in the caption band, under the graph's room: none of
    the boxes (the ones outlined for the update the lowest of them) comes down over
    them, as the bias's box had come over its weight's line."""
    pytest.importorskip("manim")
    from backpropviz.animate.training import TrainingScene
    from tests.test_animate import dry_run

    class Measured(TrainingScene):
        def play_update(self, k):
            super().play_update(k)
            if k == 0:
                frame = self.camera.frame  # (the boxes in view)
                boxes = [value.frame for value in self.diagram.values.values()
                         if value.frame.get_right()[0] > frame.get_left()[0]
                         and value.frame.get_left()[0] < frame.get_right()[0]]
                self.clearance = min(box.get_bottom()[1] for box in boxes) \
                    - self.caption.get_top()[1]

    # (the lecture's slide: a weight vector and a bias, fitted to two points)
    w = Tensor([0.5, -0.3], label="w", requires_grad=True)
    b = Tensor(0.1, label="b", requires_grad=True)
    x = Tensor([[1.0, 2.0], [3.0, -1.0]], label="x")
    y = Tensor([1.0, 2.0], label="y")
    run = sgd_run({"w": w, "b": b}, lambda: ((x @ w + b - y) ** 2).mean(), 2, 0.1)
    scene = dry_run(run, Measured)
    assert scene.clearance > 0


def test_the_clip_opens_on_a_title_card_that_says_what_the_passes_will_show():
    """As the sweep's clip does, a training clip opens on what is computed, and then
    what comes: the loop's passes, each forward, backward and its update, at its rate."""
    scene = _story(neuron_run(3, rate=0.25))
    first_start, first = scene.cues[0]
    assert first_start == 0
    assert "by the chain rule" in first
    assert first.endswith("then the loop's 3 passes in turn: forward, backward, and each "
                          "parameter's update (η = 0.25), the first told in full")


def test_a_loop_whose_graph_changes_is_refused_in_a_sentence():
    from backpropviz.animate import AnimateError

    run = neuron_run(2)
    other = matrix_run(1).iterations[0]
    changed = Run([run.iterations[0], Iteration(1, other.loss, other.graph, {})])
    with pytest.raises(AnimateError, match="graph of pass 1 differs"):
        _story(changed)


def test_the_clip_renders_at_low_quality(tmp_path):
    av = pytest.importorskip("av")
    from backpropviz.animate.training import render_training_clip

    path = render_training_clip(neuron_run(2), tmp_path / "run.mp4",
                                Options(speed=8.0, quality="l"))
    with av.open(str(path)) as movie:
        video = movie.streams.video[0]
        assert (video.width, video.height) == (854, 480)
        assert float(video.duration * video.time_base) > 1
    assert (tmp_path / "run.srt").read_text(encoding="utf-8").count("w ← w − η·∂L/∂w") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.mp4", "run.srt"]


def _book_mlp_gradients(W1, W2) -> dict[str, np.ndarray]:
    """∂L/∂W1 and ∂L/∂W2 of matrix_run's L = ½(W2 relu(W1 x) − 1)², by hand in numpy."""
    W1, W2, x = np.array(W1), np.array(W2), np.array([1.0, 2.0])
    z = W1 @ x
    h = np.maximum(z, 0.0)
    error = W2 @ h - 1.0
    return {"W2": np.outer(error, h), "W1": np.outer((W2.T @ error) * (z > 0), x)}


def test_at_speed_each_parameter_has_a_readable_card_with_that_passes_numbers():
    from backpropviz.animate.screen import TEXT_EM

    run = matrix_run(4)
    scene = _story(run)
    # Every pass at speed ends with each card showing the gradient the pass gave its
    # parameter (worked out by hand here) and its value as the pass read it; each
    # update turns the card's value into what the loop left in it.
    for k in (1, 2, 3):
        shown = [(name, data, grad) for j, name, data, grad in scene.cards_shown if j == k]
        assert [name for name, _, _ in shown] == ["W1", "W2", "W1", "W2"]
        for name, data, grad in shown[:2]:  # at the end of the sweep
            update = run.iterations[k].parameters[name]
            by_hand = _book_mlp_gradients(update.before if name == "W1" else
                                          run.iterations[k].parameters["W1"].before,
                                          run.iterations[k].parameters["W2"].before)[name]
            assert np.allclose(_cells(grad), by_hand, rtol=1e-3, atol=1e-4)
            assert np.allclose(_cells(data), update.before, rtol=1e-3, atol=1e-4)
        for name, data, _ in shown[2:]:  # after the update
            assert np.allclose(_cells(data), run.iterations[k].parameters[name].after,
                               rtol=1e-3, atol=1e-4)
    # The cards' numbers are set at the caption's size or larger on screen (40 px at
    # 1080p), and the strip, the cards and the curve sit apart, inside the frame.
    center, zoom = scene.strip_view
    assert all(card.em / zoom >= TEXT_EM for card in scene.cards.values())

    def on_screen(mobject) -> tuple[float, float, float, float]:
        (left, bottom, _), (right, top, _) = ((mobject.get_corner(c) - center) / zoom
                                              for c in ((-1, -1, 0), (1, 1, 0)))
        return left, bottom, right, top

    parts = [on_screen(scene.diagram), *(on_screen(card) for card in scene.cards.values()),
             on_screen(scene.curve)]
    for left, bottom, right, top in parts:
        assert -7.1 <= left < right <= 7.1 and -4 <= bottom < top <= 4
    for i, a in enumerate(parts):
        for b in parts[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)


def _cells(cells: list[list[str]]) -> np.ndarray:
    """A card's table of cells as numbers (a vector's column read back as the IR's)."""
    return np.array([[float(c.replace("\u2212", "-")) for c in row] for row in cells])


def four_parameter_run(passes: int = 2, rate: float = 0.05) -> Run:
    """A layer with a bias, ReLU, a layer with a bias: four parameters, 6 + 3 + 3 + 1
    numbers, trained by SGD on one point."""
    W1 = Tensor([[1.0, -1.0], [0.5, 1.0], [-0.5, 0.25]], label="W1", requires_grad=True)
    b1 = Tensor([0.1, -0.2, 0.3], label="b1", requires_grad=True)
    W2 = Tensor([[2.0, -1.0, 0.5]], label="W2", requires_grad=True)
    b2 = Tensor([0.05], label="b2", requires_grad=True)
    return sgd_run({"W1": W1, "b1": b1, "W2": W2, "b2": b2},
                   lambda: ((W2 @ (W1 @ _point() + b1).relu() + b2 - 1.0) ** 2).sum() / 2,
                   passes, rate)


def test_an_update_of_many_numbers_is_said_in_at_most_three_rows():
    from backpropviz.animate.screen import CAPTION_EM, wrapped_words
    from backpropviz.animate.training import UPDATE_ROWS

    run = four_parameter_run()
    scene = _story(run)
    said = [text for _, text in scene.cues if text.startswith(("W1 ←", "each parameter",
                                                                 "Pass "))]
    assert len(said) >= 2 * len(run.iterations) - 1  # every update, every later start
    for text in said:
        rows = sum(len(wrapped_words(line, CAPTION_EM, at_equals=True))
                   for line in text.split("\n"))
        assert rows <= UPDATE_ROWS, text
    # Each update is still said true to its numbers: the rule with the run's rate.
    assert any("η = 0.05" in text for text in said)
    # Four cards, their numbers at least 14 pt on a 16:9 slide (28 px of 1080: 0.21 units).
    _, zoom = scene.strip_view
    assert len(scene.cards) == 4
    assert all(card.em / zoom >= 28 / 135 for card in scene.cards.values())


def test_the_figures_end_numbers_stay_clear_of_the_axes_numbers_and_titles_on_the_slide(
        tmp_path):
    # A loss that falls to nearly 0 ends on its axis: its last number is written over
    # the point, not under it across the iterations' numbers; a long parameter name is
    # set smaller rather than run off the slide.
    from backpropviz.metrics import text_width

    short = neuron_run(60, rate=0.3)
    run = Run([Iteration(it.index, it.loss, it.graph,  # (a long name, as nn.Sequential's)
                         {f"model.0.{name}_of_the_first_layer": update
                          for name, update in it.parameters.items()})
               for it in short.iterations], total=short.total)
    root = _svg(render_training_figure(run, tmp_path / "run.svg", Options()))
    texts = [(t.get("class", ""), float(t.get("x")), float(t.get("y")),
              float(t.get("font-size")), "".join(t.itertext()), t.get("text-anchor"))
             for t in root.iter(f"{SVG}text")]
    ticks = [(x, y, size) for cls, x, y, size, _, _ in texts if cls == "tick-x"]
    labels = [(x, y, size, text, anchor) for cls, x, y, size, text, anchor in texts
              if cls == "value-label"]
    assert run.iterations[-1].loss < 0.01 * run.iterations[0].loss and labels
    for x, y, size, text, anchor in labels:
        width = text_width(text, size)
        left = x - width if anchor == "end" else x
        for tx, ty, tsize in ticks:
            apart = left > tx + 40 or left + width < tx - 40 or y < ty - tsize or y - size > ty
            assert apart, (text, x, y, tx, ty)
    for cls, x, _, size, text, _ in texts:
        if cls == "panel-title":
            face = "sans" if text == "loss" else "serif"
            assert x + text_width(text, size, face) <= 1920, text


def _figure_of(steps: dict[str, list[float]], tmp_path) -> tuple[ET.Element, list]:
    """The training figure of a neuron's run whose parameters took ``steps`` (each's value
    at every pass, then after the last update: SGD at rate 0.1), and its lines' points."""
    made = neuron_run(len(next(iter(steps.values()))) - 1)
    run = Run([Iteration(it.index, it.loss, it.graph, {
        name: Update(values[k], (values[k] - values[k + 1]) / 0.1, values[k + 1], 0.1)
        for name, values in steps.items()}) for k, it in enumerate(made.iterations)],
        total=len(made.iterations))
    root = _svg(render_training_figure(run, tmp_path / "run.svg", Options()))
    lines = [[tuple(map(float, point.split(","))) for point in line.get("points").split()]
             for line in root.iter(f"{SVG}polyline") if line.get("class") == "line"]
    return root, lines


def test_each_end_number_stands_away_from_the_segment_beside_it(tmp_path):
    """w's line falls as a whole but rises to its end: its last number goes over the end,
    where the line does not run, not under it by the point before (a student read w₁'s
    0.03809 as pass 2's); and a first number goes on the side its first segment leaves."""
    # (a student's three passes, as their engine printed them)
    steps = {"w": [0.3, 0.3717, -0.2420, 0.03809], "b": [0.1, 0.1102, -0.2442, -0.148]}
    root, lines = _figure_of(steps, tmp_path)
    labels = {"".join(t.itertext()): (t.get("data-which"), float(t.get("y")))
              for t in root.iter(f"{SVG}text") if t.get("class") == "value-label"}
    checked = 0
    for values, line in zip([None, *steps.values()], lines, strict=True):
        if values is None:  # (the loss, whose numbers come from the run's own passes)
            continue
        for which, point, beside in (("first", line[0], line[1]), ("last", line[-1], line[-2])):
            text = display_number(values[0 if which == "first" else -1], 4)
            assert labels[text][0] == which
            # over the point where its segment goes down from it (screen y grows down),
            # under it where the segment goes up
            over = labels[text][1] < point[1]
            assert over == (beside[1] > point[1]), (text, labels[text], point, beside)
            checked += 1
    assert checked == 4


@pytest.mark.parametrize("made", ["neuron", "steep_fall", "four_parameters"])
def test_the_clips_end_panels_number_the_passes_and_keep_each_last_number_off_its_line(made):
    # The clip's closing panels as its figure draws them: the passes numbered along the
    # bottom, each single line's last number beside its end where the line does not run
    # (a b falling steeply to its end had its number written across it).
    from manim import Line, Text, VMobject

    from backpropviz.memory_chart import x_ticks

    run = {"neuron": lambda: neuron_run(4), "four_parameters": four_parameter_run,
           "steep_fall": lambda: neuron_run(3, rate=0.3)}[made]()
    scene = _story(run)
    x_max = run.iterations[-1].index + 1
    checked = 0
    for panel in scene.end_panels:
        axis = next(part for part in panel[0] if isinstance(part, Line))
        bottom = axis.get_start()[1]
        numbers = panel[3]
        assert [text.text for text in numbers] == [f"{x:g}" for x in x_ticks(x_max)]
        assert all(text.get_top()[1] < bottom for text in numbers)
        paths = [part for part in panel if type(part) is VMobject]
        if len(paths) != 1:
            continue
        line, last = paths[0].get_anchors(), panel[-1]
        assert isinstance(last, Text)
        left, right = last.get_left()[0], last.get_right()[0]
        low, high = last.get_bottom()[1], last.get_top()[1]
        for x in np.linspace(left, right, 50):  # the line's height under the number's width
            heights = [y0 + (y1 - y0) * (x - x0) / (x1 - x0)
                       for (x0, y0, _), (x1, y1, _) in itertools.pairwise(line)
                       if x0 <= x <= x1 and x1 > x0]
            assert all(not low - 0.02 < y < high + 0.02 for y in heights), (made, last.text)
        assert low > bottom  # (and over the axis)
        checked += 1
    assert checked >= 2
    # (its title keeps no key to the gradients' colour: the panels draw values only)
    said = [part.text for part in scene.title.get_family() if isinstance(part, Text)]
    assert said and not any("gradient" in text for text in said)


def test_the_figures_end_numbers_do_not_cross_their_lines(tmp_path):
    # A bias rising steeply from near its axis (a trial user's model.2.bias, −0.06275 to
    # 0.3398): its first number, over the point as under would reach the axis, had the
    # line run through it; it now stands clear of the line across its whole width.
    from backpropviz.metrics import text_width

    # (four parameters: the slide's small panels, two by two)
    steps = {"w": [0.5, 0.49, 0.5, 0.51, 0.5], "u": [0.5, 0.6, 0.7, 0.8, 0.85],
             "v": [0.1, 0.2, 0.25, 0.3, 0.33], "b": [-0.06275, 0.1, 0.2145, 0.2903, 0.3398]}
    root, lines = _figure_of(steps, tmp_path)
    labels = [t for t in root.iter(f"{SVG}text") if t.get("class") == "value-label"]
    assert len(labels) == 2 * len(lines)  # (a first and a last number for each line)
    for label in labels:
        text, px = "".join(label.itertext()), float(label.get("font-size"))
        x, baseline = float(label.get("x")), float(label.get("y"))
        width = text_width(text, px)
        left = x - width if label.get("text-anchor") == "end" else x
        top = baseline - 0.75 * px
        for line in lines:
            for (xa, ya), (xb, yb) in itertools.pairwise(line):
                for s in np.linspace(0, 1, 40):
                    px_, py_ = xa + s * (xb - xa), ya + s * (yb - ya)
                    assert not (left < px_ < left + width and top < py_ < baseline), text


def test_a_run_whose_rate_cannot_be_read_says_so_without_naming_an_optimizer(tmp_path):
    # (momentum, Adam, a loop that sums its gradients before updating once, an update by
    # hand with a rate per entry: the subtitle says what was drawn, not who made it)
    root = _svg(render_training_figure(neuron_run(3, momentum=0.9), tmp_path / "m.svg",
                                       Options()))
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert "3 passes (0–2); each update as the script made it (values before and after)" \
        in texts
    assert not any("η =" in text or "optimizer" in text for text in texts)


def test_a_matrix_parameters_update_is_marked_by_its_rule_clear_of_the_key(browser,
                                                                            tmp_path):
    """A weight matrix's update line runs to a hundred characters and more: drawn whole
    beside its box (at 13 px, scaled down with the picture) it ran across the other
    boxes and the key. Its mark is its rule, W₁ ← W₁ − η·∂L/∂W₁, the numbers left to
    the caption below; no mark lies on the key."""
    run = matrix_run()
    page, _, _, errors = _open(browser, tmp_path, run, f"#iter=0&step={_steps(run, 0)}")
    moment = page.evaluate(MOMENT)
    assert sorted(text for _, text in moment["labels"]) == [  # (W₂'s line is short: whole)
        "W₁ ← W₁ − η·∂L/∂W₁", "W₂ ← W₂ − η·∂L/∂W₂ = [2, −1] − 0.05 · [0, −6] = [2, −0.7]"]
    assert all(f"{name} ← {name} − η·∂L/∂{name} = [" in moment["caption"]
               for name in ("W₁", "W₂"))
    boxes = page.evaluate("""() => {
      const box = (e) => { const r = e.getBoundingClientRect();
                           return [r.left, r.top, r.right, r.bottom]; };
      return {key: box(document.querySelector('#stage g.legend')),
              labels: [...document.querySelectorAll('#stage .update-label rect')].map(box)};
    }""")
    kl, kt, kr, kb = boxes["key"]
    for left, top, right, bottom in boxes["labels"]:
        assert right <= kl or left >= kr or bottom <= kt or top >= kb
    assert errors == []
