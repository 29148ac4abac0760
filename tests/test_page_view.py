"""The step-through page in Chromium: the drawing fitted to the window, zoom and pan,
the step in the address (shared, and Back), full screen, captions with numbers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from backpropviz.captions import value_names
from backpropviz.html import render_html
from backpropviz.script import graph_of_script
from backpropviz.style import THEMES
from tests.test_html import EXAMPLES, browser, open_page  # noqa: F401  (the fixture)

VIEW = """() => {
  const svg = document.querySelector('#stage svg');
  const stage = document.getElementById('stage').getBoundingClientRect();
  const drawn = svg.querySelector('g').getBoundingClientRect();
  return {viewBox: svg.getAttribute('viewBox'), scale: svg.getScreenCTM().a,
          stage: [stage.left, stage.top, stage.width, stage.height],
          drawn: [drawn.left, drawn.top, drawn.width, drawn.height],
          hash: location.hash, step: Number(document.getElementById('bpv').dataset.step),
          caption: document.getElementById('caption').textContent};
}"""

# The smallest number drawn in a value box, in screen pixels (its font size
# times the drawing's scale on screen).
SMALLEST_NUMBER = """() => {
  const svg = document.querySelector('#stage svg');
  let smallest = Infinity;
  for (const text of svg.querySelectorAll('g.node.value text')) {
    if (!/^[−\\d.]+$/.test(text.textContent.trim())) continue;
    const size = parseFloat(text.getAttribute('font-size'));
    smallest = Math.min(smallest, size * text.getScreenCTM().a);
  }
  return smallest;
}"""


def _fits(view) -> bool:
    """The drawing lies in the stage and fills it in one direction."""
    sl, st, sw, sh = view["stage"]
    dl, dt, dw, dh = view["drawn"]
    inside = dl >= sl - 1 and dt >= st - 1 and dl + dw <= sl + sw + 1 and dt + dh <= st + sh + 1
    return inside and (dw >= 0.9 * sw or dh >= 0.9 * sh)


def test_the_drawing_fits_the_window_and_refits_on_resize(example, browser, tmp_path):  # noqa: F811 (the fixture)
    page, _, _, errors = open_page(browser, tmp_path, example("d2l_mlp"), "d2l_mlp")
    assert _fits(page.evaluate(VIEW))
    page.set_viewport_size({"width": 900, "height": 700})
    assert _fits(page.evaluate(VIEW))
    page.set_viewport_size({"width": 1600, "height": 600})
    assert _fits(page.evaluate(VIEW))
    assert errors == []


def test_wheel_zooms_where_the_pointer_is_drag_pans_and_fit_resets(example, browser, tmp_path):  # noqa: F811 (the fixture)
    page, _, _, errors = open_page(browser, tmp_path, example("d2l_mlp"), "d2l_mlp")
    fitted = page.evaluate(VIEW)
    sl, st, sw, sh = fitted["stage"]
    x, y = sl + sw * 0.3, st + sh * 0.5
    under = page.evaluate(f"() => {{ const p = document.querySelector('#stage svg')"
                          f".createSVGPoint(); p.x = {x}; p.y = {y}; return p.matrixTransform("
                          "document.querySelector('#stage svg').getScreenCTM().inverse()).x }")
    page.mouse.move(x, y)
    page.mouse.wheel(0, -400)
    zoomed = page.evaluate(VIEW)
    assert zoomed["scale"] > 1.5 * fitted["scale"]
    still = page.evaluate(f"() => {{ const p = document.querySelector('#stage svg')"
                          f".createSVGPoint(); p.x = {x}; p.y = {y}; return p.matrixTransform("
                          "document.querySelector('#stage svg').getScreenCTM().inverse()).x }")
    assert still == pytest.approx(under, abs=1.0)  # the point under the pointer stays
    page.mouse.down()
    page.mouse.move(x + 100, y + 40, steps=5)
    page.mouse.up()
    panned = page.evaluate(VIEW)
    assert panned["drawn"][0] == pytest.approx(zoomed["drawn"][0] + 100, abs=2)
    assert panned["drawn"][1] == pytest.approx(zoomed["drawn"][1] + 40, abs=2)
    page.click("#fit")
    assert page.evaluate(VIEW)["viewBox"] == fitted["viewBox"]
    page.keyboard.press("+")
    assert page.evaluate(VIEW)["scale"] > fitted["scale"]
    page.keyboard.press("0")
    assert page.evaluate(VIEW)["viewBox"] == fitted["viewBox"]
    assert errors == []


def test_the_address_follows_the_step_and_back_returns(example, browser, tmp_path):  # noqa: F811 (the fixture)
    G = example("add_mul")
    page, path, _, errors = open_page(browser, tmp_path, G, "add_mul")
    assert page.evaluate(VIEW)["step"] == 0
    page.keyboard.press("ArrowRight")
    view = page.evaluate(VIEW)
    assert view["hash"] == "#step=1"
    # The caption with the book's numbers (SEED.md: ∂e/∂d = c = −3).
    assert view["caption"] == "∂e/∂d = c · ∂e/∂e = (−3) · 1 = −3\n∂e/∂c = d · ∂e/∂e = 3 · 1 = 3"
    page.keyboard.press("ArrowRight")
    assert page.evaluate(VIEW)["hash"] == "#step=2"
    page.go_back()
    view = page.evaluate(VIEW)
    assert (view["step"], view["hash"]) == (1, "#step=1")
    page.go_back()
    assert page.evaluate(VIEW)["step"] == 0
    page.go_forward()
    assert page.evaluate(VIEW)["step"] == 1
    # A shared address opens at its step.
    other = browser.new_page(viewport={"width": 1280, "height": 720})
    other.goto(path.as_uri() + "#step=2")
    assert other.evaluate(VIEW)["step"] == 2
    other.close()
    assert errors == []


def test_f_toggles_full_screen(example, browser, tmp_path):  # noqa: F811 (the fixture)
    page, _, _, errors = open_page(browser, tmp_path, example("add_mul"), "add_mul")
    page.keyboard.press("f")
    page.wait_for_function("() => document.fullscreenElement !== null")
    assert page.evaluate("() => document.fullscreenElement.id") == "bpv"
    page.keyboard.press("f")
    page.wait_for_function("() => document.fullscreenElement === null")
    assert errors == []


def test_the_books_objective_is_readable_at_1280_by_720(example, browser, tmp_path):  # noqa: F811 (the fixture)
    page, _, _, errors = open_page(browser, tmp_path, example("d2l_objective"), "objective")
    # (folded in two rows for the stage, carried on at marks rather than along a
    # diagonal across the figure: 12.5 px is the size that reaches, was 14)
    assert page.evaluate(SMALLEST_NUMBER) >= 12.5
    assert _fits(page.evaluate(VIEW))
    # The caption's numbers too (the step with the fork at W2).
    page.goto(page.url.split("#")[0] + "#step=10")
    size = page.evaluate("() => parseFloat(getComputedStyle("
                         "document.getElementById('caption')).fontSize)")
    assert size >= 14
    assert "[0.2, −0.1] + [0, −4] = [0.2, −4.1]" in page.evaluate(VIEW)["caption"]
    assert errors == []


def test_the_page_without_a_frame_keeps_draws_layout(example, tmp_path):
    G = example("d2l_objective")
    folded = render_html(G, tmp_path / "fitted.html").read_text(encoding="utf-8")
    plain = render_html(G, tmp_path / "plain.html", fit=None).read_text(encoding="utf-8")

    def aspect(page: str) -> float:
        _, _, width, height = map(float, re.search(r'viewBox="([^"]+)"', page).group(1).split())
        return width / height

    # draw lays the objective out in one long row; for the page's 1240x500 stage
    # it is folded, nearer the stage's shape.
    assert aspect(plain) > 3.5 and abs(aspect(folded) - 1240 / 500) < 0.5


# ---------------------------------------------------------------- nothing in the way

TOOLTIP = """() => {
  const tip = document.getElementById('tooltip');
  const cells = (selector) => [...tip.querySelectorAll(selector + ' td')].map(td => td.textContent);
  return {hidden: tip.hidden, name: tip.querySelector('.name') && tip.querySelector('.name').textContent,
          data: cells('table.data'), grad: cells('table.grad'),
          sources: [...tip.querySelectorAll('.sources li:not(.sum)')].map(li => li.textContent),
          sum: tip.querySelector('.sources .sum') !== null};
}"""


def _number(text: str) -> float:
    return float(text.replace("−", "-"))


def _entries(x) -> list[float]:
    return [float(v) for v in np.asarray(x, dtype=np.float64).ravel()]


def test_hover_and_focus_show_a_value_whole_and_where_its_gradient_came_from(browser, tmp_path):  # noqa: F811 (the fixture)
    G = graph_of_script(EXAMPLES / "capstone" / "forked_neuron.py", (), quiet=True)
    names = {name.text: node for node, name in value_names(G).items()}
    page, _, _, errors = open_page(browser, tmp_path, G, "capstone")
    page.keyboard.press("End")
    h = names["h"]
    page.hover(f"g#{h}")
    tip = page.evaluate(TOOLTIP)
    assert tip["name"] == "h"
    # Full precision: tanh(0.05) to float64's digits, not the 4 drawn.
    assert [_number(c) for c in tip["data"]] == pytest.approx(_entries(G.nodes[h]["data"]),
                                                              rel=1e-14, abs=0)
    assert [_number(c) for c in tip["grad"]] == pytest.approx(_entries(G.nodes[h]["grad"]),
                                                              rel=1e-14)
    # Each edge h's gradient came back along, with its share and the op.
    edges = [(v, g) for _, v, g in G.out_edges(h, data="grad") if g is not None]
    assert len(tip["sources"]) == len(edges) == 2 and tip["sum"]
    for (op, share), text in zip(sorted(edges, key=lambda e: G.graph["backward_order"]
                                        .index(e[0])), tip["sources"], strict=True):
        symbol, kind = G.nodes[op]["symbol"], G.nodes[op]["op"]
        assert text.startswith(f"from {symbol} ({kind} → ")
        assert _number(text.rsplit(": ", 1)[1]) == pytest.approx(share, rel=1e-14)
    # At step 1 only the first share has come back.
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.mouse.move(0, 0)
    page.hover(f"g#{h}")
    assert len(page.evaluate(TOOLTIP)["sources"]) == 1
    # The keyboard reaches every value (Tab), and the details come with the focus.
    page.mouse.move(0, 0)
    page.evaluate("() => document.activeElement.blur()")
    reached = []
    for _ in range(40):
        page.keyboard.press("Tab")
        focused = page.evaluate("() => document.activeElement.closest('g.node.value') ? "
                                "document.activeElement.id : null")
        if focused:
            reached.append(focused)
            tip = page.evaluate(TOOLTIP)
            assert not tip["hidden"] and tip["name"] == value_names(G)[focused].text
    assert set(reached) == {str(v) for v, kind in G.nodes(data="kind") if kind == "value"}
    assert errors == []
    page.close()


def test_a_drag_pans_and_selects_no_text(example, browser, tmp_path):  # noqa: F811 (the fixture)
    page, _, _, errors = open_page(browser, tmp_path, example("d2l_mlp"), "d2l_mlp")
    before = page.evaluate(VIEW)
    text = page.locator("g#v1 text").first.bounding_box()  # a number of W1
    # A double click (which fits the drawing) or a triple click selects nothing.
    page.mouse.dblclick(text["x"] + 2, text["y"] + text["height"] / 2)
    assert page.evaluate("() => window.getSelection().toString()") == ""
    page.mouse.click(text["x"] + 2, text["y"] + text["height"] / 2, click_count=3)
    assert page.evaluate("() => window.getSelection().toString()") == ""
    # A drag from a number out over the caption pans, and selects nothing either.
    caption = page.locator("#caption").bounding_box()
    page.mouse.move(text["x"] + 2, text["y"] + text["height"] / 2)
    page.mouse.down()
    page.mouse.move(caption["x"] + caption["width"] / 2, caption["y"] + 5, steps=8)
    page.mouse.up()
    assert page.evaluate("() => window.getSelection().toString()") == ""
    assert page.evaluate(VIEW)["viewBox"] != before["viewBox"]
    assert errors == []
    page.close()
