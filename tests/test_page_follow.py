"""The page's view follows the step when the whole drawing is too small to read.

Read in Chromium at 1280x720 (a laptop's window; projected, each px is 1.5 of a 1080p
screen's): the size of a number on screen, from the drawing's own font size and the
screen's transform of it; where the current op is against the stage.
"""

from __future__ import annotations

import math

import pytest

from backpropviz import Value
from backpropviz.ir import to_networkx

# A number's em in px below which the fitted drawing is followed, and the most a step
# is zoomed to (html_follow.js's READABLE and LARGEST).
READABLE, LARGEST = 14, 30

# The view now (x, y, w, h in the drawing's units), a number's em on screen, the current
# op's box and the stage's, and whether the follow button is pressed.
READ_VIEW = """() => {
  const svg = document.querySelector('#stage svg');
  const number = svg.querySelector('g.node.value text:not([font-family])');  // (inherited)
  const ctm = number.getScreenCTM();
  const rect = (element) => { const r = element.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom]; };
  const op = svg.querySelector('g.node.op.current');
  return {view: Object.values(window.bpv.view()), stage: rect(document.getElementById('stage')),
          em: Number(number.getAttribute('font-size')) * Math.hypot(ctm.a, ctm.b),
          op: op ? rect(op) : null, step: Number(document.getElementById('bpv').dataset.step),
          following: document.getElementById('follow').getAttribute('aria-pressed') === 'true'};
}"""


@pytest.fixture(scope="module")
def open_still(browser, tmp_path_factory):
    """A page opened at 1280x720 with reduced motion asked for (the view jumps to each
    step's frame instead of gliding there), and its errors."""
    from backpropviz.html import render_html

    pages = []

    def open_(G, name):
        path = render_html(G, tmp_path_factory.mktemp("follow") / f"{name}.html")
        page = browser.new_page(viewport={"width": 1280, "height": 720},
                                reduced_motion="reduce")
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(path.as_uri())
        pages.append(page)
        return page, errors
    yield open_
    for page in pages:
        page.close()


def chain(n: int):
    """A long chain of scalar ops, as a loop of updates makes: too wide to read whole
    in a window 1280 px wide."""
    x = Value(0.5, label="x")
    for i in range(n):
        x = x * Value(1.01, label=f"w{i}") + 0.1
    x.backward()
    return to_networkx(x)


def inside(box, stage) -> bool:
    return (stage[0] - 0.5 <= box[0] and box[2] <= stage[2] + 0.5
            and stage[1] - 0.5 <= box[1] and box[3] <= stage[3] + 0.5)


@pytest.mark.parametrize("name", ["mlp3", "chain"])
def test_a_drawing_too_small_to_read_is_framed_step_by_step(example, open_still, name):
    G = chain(12) if name == "chain" else example(name)
    page, errors = open_still(G, name)
    whole = page.evaluate(READ_VIEW)
    assert whole["em"] < READABLE and whole["following"]  # too small whole, so followed
    last = int(page.get_attribute("#bpv", "data-steps"))
    frames = set()
    for step in range(1, last + 1):
        page.keyboard.press("ArrowRight")
        now = page.evaluate(READ_VIEW)
        assert now["step"] == step and now["following"]
        # The step's op is on the stage whole, its numbers readable but not outsized.
        assert inside(now["op"], now["stage"]), step
        assert READABLE - 0.01 <= now["em"] <= LARGEST + 0.01, step
        frames.add(tuple(now["view"]))
    assert len(frames) > last / 2  # (each step its own frame, more or less)
    # Fitting by hand shows the whole drawing, and stops following.
    page.keyboard.press("0")
    fitted = page.evaluate(READ_VIEW)
    assert fitted["view"] == whole["view"] and not fitted["following"]
    page.keyboard.press("ArrowLeft")
    assert page.evaluate(READ_VIEW)["view"] == whole["view"]
    # The button follows again, from the step shown now.
    page.click("#follow")
    again = page.evaluate(READ_VIEW)
    assert again["following"] and again["view"] != whole["view"]
    assert inside(again["op"], again["stage"]) and again["em"] >= READABLE - 0.01
    # Zooming by hand stops following too.
    page.mouse.move(640, 300)
    page.mouse.wheel(0, -200)
    assert not page.evaluate(READ_VIEW)["following"]
    assert errors == []


def test_a_drawing_readable_whole_is_not_moved(example, open_still):
    page, errors = open_still(example("add_mul", "e"), "add_mul")
    whole = page.evaluate(READ_VIEW)
    assert whole["em"] >= READABLE and not whole["following"]
    for _ in range(3):
        page.keyboard.press("ArrowRight")
        assert page.evaluate(READ_VIEW)["view"] == whole["view"]
    assert errors == []


def test_every_text_of_a_drawing_far_too_big_to_read_whole_is_laid_out(open_still):
    """graphviz scales a 100-step chain to 3% to fit the page: its type is 0.4 px. The
    page lays the drawing out once and moves it by a transform, at a size where a number
    is a slide's (laid out at 0.4 px, Chromium gave a short name such as an index no box
    at all, and never drew it, however far the view was zoomed in)."""
    page, errors = open_still(chain(100), "chain100")
    texts, empty = page.evaluate("""() => {
      const texts = [...document.querySelectorAll('#stage svg text')]
        .filter(text => text.textContent.trim());
      return [texts.length, texts.filter(text => { const box = text.getBBox();
        return !(box.width > 0 && box.height > 0); }).map(text => text.textContent)];
    }""")
    assert texts > 1000 and empty == []
    assert errors == []


def test_the_wheel_zooms_a_big_drawing_in_until_its_numbers_are_large(open_still):
    """Fitted, a 100-step chain's numbers are under half a px: the wheel zooms in as far
    as numbers of 60 px, not stopping at a 40th of the drawing (16 px here; the frames
    the page follows with are nearer than that)."""
    page, errors = open_still(chain(100), "chain100-wheel")
    page.keyboard.press("0")  # (fitted, not following)
    assert page.evaluate(READ_VIEW)["em"] < 1
    page.mouse.move(640, 300)
    for _ in range(30):
        page.mouse.wheel(0, -300)
    em = page.evaluate(READ_VIEW)["em"]
    assert 59 <= em <= 60.5
    assert errors == []


def test_a_caption_taller_than_the_window_leaves_the_drawing_its_room(open_still):
    """An LSTM's linear steps caption columns of twelve numbers: the caption scrolls in
    at most a third of the window, the drawing keeps the rest, and its view is never
    lost (before, the stage shrank to nothing, the view went NaN and stayed so). The
    worked lines scroll; the step's name and its rule stay in sight (the rule was
    scrolled half under the controls)."""
    from pathlib import Path

    from backpropviz.script import graph_of_script

    G = graph_of_script(Path(__file__).parent / "torch_scripts" / "lstm_cell.py", quiet=True)
    page, errors = open_still(G, "lstm_cell")
    tallest = 0
    # The last steps (the weights' shares) have the tallest captions; then back, and
    # from the start again.
    for key in ["End"] + ["ArrowLeft"] * 6 + ["Home"] + ["ArrowRight"] * 3:
        page.keyboard.press(key)
        now = page.evaluate(READ_VIEW)
        caption = page.evaluate("""() => {
          const box = (id) => document.getElementById(id).getBoundingClientRect();
          const shown = (id) => box(id).top >= box('caption-box').top - 0.5 &&
            box(id).bottom <= Math.min(box('caption-box').bottom, box('controls').top) + 0.5;
          return {height: [...document.getElementById('caption-box').children]
                    .reduce((sum, part) => sum + part.scrollHeight, 0),
                  shown: shown('step-label') && shown('rule')};
        }""")
        assert caption["shown"], now["step"]
        tallest = max(tallest, caption["height"])
        step = now["step"]
        assert now["stage"][3] - now["stage"][1] >= 0.5 * 720, step
        assert all(math.isfinite(n) for n in now["view"]), step
        if now["op"] is not None and now["following"]:
            assert inside(now["op"], now["stage"]), step
    assert tallest > 0.4 * 720  # (the case: a caption that would not fit)
    assert errors == []
