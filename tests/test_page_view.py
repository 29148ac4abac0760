"""The step-through page in Chromium: the drawing fitted to the window, zoom and pan,
the step in the address (shared, and Back), full screen, captions with numbers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from backpropviz.html import render_html
from backpropviz.names import value_names
from backpropviz.script import graph_of_script
from backpropviz.style import THEMES
from tests.test_html import EXAMPLES, open_page

# Waits for a frame to be painted.
FRAME = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"

VIEW = """() => {
  const svg = document.querySelector('#stage svg');
  const stage = document.getElementById('stage').getBoundingClientRect();
  const drawn = svg.querySelector('g').getBoundingClientRect();
  return {view: Object.values(window.bpv.view()), scale: svg.getScreenCTM().a,
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


def test_the_drawing_fits_the_window_and_refits_on_resize(example, browser, tmp_path):
    page, _, _, errors = open_page(browser, tmp_path, example("d2l_mlp"), "d2l_mlp")
    assert _fits(page.evaluate(VIEW))
    # (the drawing is placed again as the stage's new size is known: by the next frame)
    for width, height in [(900, 700), (1600, 600)]:
        page.set_viewport_size({"width": width, "height": height})
        page.evaluate(FRAME)
        assert _fits(page.evaluate(VIEW))
    assert errors == []


def test_wheel_zooms_where_the_pointer_is_drag_pans_and_fit_resets(example, browser, tmp_path):
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
    assert page.evaluate(VIEW)["view"] == fitted["view"]
    page.keyboard.press("+")
    assert page.evaluate(VIEW)["scale"] > fitted["scale"]
    page.keyboard.press("0")
    assert page.evaluate(VIEW)["view"] == fitted["view"]
    assert errors == []


def test_zooming_and_panning_lay_the_drawing_out_no_more(example, browser, tmp_path):
    """The view moves by a transform of the drawing, which the browser paints as laid
    out: changing the viewBox instead had it lay every text out again at each wheel
    notch and each move of a drag (70 ms a time on an LSTM cell's page)."""
    page, _, _, errors = open_page(browser, tmp_path, example("mlp3"), "mlp3")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")

    def layouts() -> float:
        page.evaluate(FRAME)
        metrics = cdp.send("Performance.getMetrics")["metrics"]
        return next(m["value"] for m in metrics if m["name"] == "LayoutCount")

    page.mouse.move(500, 300)  # (onto a value: its tooltip is laid out as it shows)
    before, fitted = layouts(), page.evaluate(VIEW)
    for _ in range(10):
        page.mouse.wheel(0, -120)
        layouts()
    page.mouse.down()
    page.mouse.move(600, 350, steps=10)
    page.mouse.up()
    moved = page.evaluate(VIEW)
    assert moved["scale"] > 2 * fitted["scale"] and moved["view"] != fitted["view"]
    assert layouts() - before <= 2  # (20 moves of the view)
    assert errors == []
    page.close()


@pytest.mark.parametrize(("name", "width", "height"), [("scalar_neuron", 1280, 720),
                                                      ("mlp3", 1920, 1080)])
def test_the_drawing_keeps_its_size_and_place_from_step_to_step(
        name, width, height, example, browser, tmp_path):
    """The caption's room is held at the tallest step's: a step whose caption has more
    lines (the + of the neuron: three worked lines, against tanh's one) no longer
    shrinks the drawing and moves it (from 1,080 px wide to 997 and back to 1,039)."""
    page, _, _, errors = open_page(browser, tmp_path, example(name), name)
    page.set_viewport_size({"width": width, "height": height})
    page.evaluate(FRAME)
    if page.evaluate("() => document.getElementById('follow').ariaPressed === 'true'"):
        page.click("#follow")  # (the view left whole: following frames each step's op)
    seen = []
    for _ in range(int(page.get_attribute("#slider", "max")) + 1):
        view = page.evaluate(VIEW)
        lines = page.evaluate("() => document.getElementById('caption').textContent")
        seen.append((view["stage"], view["drawn"], lines.count("\n") + 1))
        page.keyboard.press("ArrowRight")
        page.evaluate(FRAME)
    assert len({lines for _, _, lines in seen}) > 1  # (the case: captions of more lines)
    assert all(stage == seen[0][0] and drawn == pytest.approx(seen[0][1], abs=0.01)
               for stage, drawn, _ in seen)
    assert errors == []


def test_the_tooltip_follows_the_pointer_not_the_drawing_moving_under_it(
        example, browser, tmp_path):
    """A wheel's zoom moves values under a pointer held still: the tooltip goes and comes
    back with the pointer's next move; a press on a value to drag the drawing shows
    none (its focus had shown one beside the value, at once hidden by the drag)."""
    page, _, _, errors = open_page(browser, tmp_path, example("d2l_mlp"), "d2l_mlp")
    shown = "() => !document.getElementById('tooltip').hidden"
    box = page.locator("#stage g.node.value").first.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    assert page.evaluate(shown)
    page.evaluate("""() => { window.tooltipShown = 0; new MutationObserver(() => {
        if (!document.getElementById('tooltip').hidden) { window.tooltipShown++; } })
      .observe(document.getElementById('tooltip'), {attributes: true, childList: true}); }""")
    for _ in range(4):
        page.mouse.wheel(0, -120)
        page.evaluate(FRAME)
    assert not page.evaluate(shown) and page.evaluate("() => window.tooltipShown") == 0
    page.mouse.down()
    page.mouse.move(x + 60, y + 30, steps=4)
    page.mouse.up()
    page.evaluate(FRAME)
    assert not page.evaluate(shown) and page.evaluate("() => window.tooltipShown") == 0
    moved = page.locator("#stage g.node.value").first.bounding_box()
    page.mouse.move(moved["x"] + moved["width"] / 2, moved["y"] + moved["height"] / 2, steps=3)
    assert page.evaluate(shown)
    assert errors == []


def test_the_pages_text_is_set_in_the_figures_fonts_and_laid_out_at_a_slides_size(
        example, browser, tmp_path):
    """The page's drawing leaves its numbers' font to inherit (a tenth of a page's
    bytes): each text is still set in the family the figure's SVG gives it, and the
    page still finds a number's size, which it lays the drawing out by."""
    from collections import Counter

    from backpropviz.diagram import step_diagrams
    from backpropviz.html import PAGE_FRAME

    G = example("mlp3")
    # (step 0's figure, laid out as the page lays it out: folded into rows, marks and all)
    first = step_diagrams(G, captions=False, fit=PAGE_FRAME)[0].svg
    declared = Counter(family.replace(",", ", ") for family in re.findall(
        r'<text[^>]*font-family="([^"]+)"', first))
    page, _, _, errors = open_page(browser, tmp_path, G, "mlp3")
    families = page.evaluate("""() => [...document.querySelectorAll('#stage svg text')]
        .map(text => getComputedStyle(text).fontFamily)""")
    assert Counter(families) == declared and len(declared) == 2  # (Helvetica's, Times')
    sizes = page.evaluate("""() => [...document.querySelectorAll('#stage svg g.node.value text')]
        .filter(text => /^[−\\d.]+$/.test(text.textContent.trim()))
        .map(text => Number(text.getAttribute('font-size')))""")
    scale = page.evaluate("""() => document.querySelector('#stage svg #graph')
        .transform.baseVal.consolidate().matrix.a""")  # (graphviz's scale of the graph)
    assert sizes and page.evaluate("window.bpv.numberEm") == pytest.approx(max(sizes) * scale)
    assert errors == []
    page.close()


def test_tab_to_a_value_off_the_stage_pans_the_view_to_it(example, browser, tmp_path):
    """Zoomed in, a value off the stage that Tab moves to is brought into it, its
    details beside it in the window; the stage itself never scrolls (it would leave
    the drawing where the view does not know it is)."""
    page, _, _, errors = open_page(browser, tmp_path, example("mlp3"), "mlp3")
    page.mouse.move(200, 200)
    for _ in range(4):
        page.mouse.wheel(0, -300)
    page.evaluate("() => document.activeElement.blur()")
    moved = 0
    for _ in range(12):
        before = page.evaluate(VIEW)["view"]
        page.keyboard.press("Tab")
        state = page.evaluate("""() => {
          const stage = document.getElementById('stage'), r = stage.getBoundingClientRect();
          const node = document.activeElement.closest('g.node.value');
          const b = node && node.getBoundingClientRect();
          const t = document.getElementById('tooltip').getBoundingClientRect();
          return {scroll: [stage.scrollLeft, stage.scrollTop], stage: [r.left, r.top, r.right,
                  r.bottom], node: b && [b.left, b.top, b.right, b.bottom],
                  tip: [t.left, t.top, t.right, t.bottom]};
        }""")
        assert state["scroll"] == [0, 0]
        if state["node"] is None:
            continue
        (sl, st, sr, sb), (nl, nt, nr, nb) = state["stage"], state["node"]
        assert sl <= (nl + nr) / 2 <= sr and st <= (nt + nb) / 2 <= sb
        tl, tt, tr, tb = state["tip"]
        assert tl >= 0 and tr <= 1280 and tt >= 0 and tb <= 720
        moved += page.evaluate(VIEW)["view"] != before
    assert moved >= 2  # (zoomed in so, most values were off the stage)
    assert errors == []
    page.close()


def test_the_details_of_a_value_tab_reaches_stand_beside_it(example, browser, tmp_path):
    """Reached by Tab, a value's details go right of it, or left of it where the window
    has no room there (they covered the value, at its right edge's pointer)."""
    page, _, _, errors = open_page(browser, tmp_path, example("d2l_mlp"), "d2l_mlp")
    page.evaluate("() => document.activeElement.blur()")
    beside = []
    for _ in range(30):
        page.keyboard.press("Tab")
        found = page.evaluate("""() => {
          const node = document.activeElement.closest('g.node.value');
          if (!node) return null;
          const box = (e) => { const r = e.getBoundingClientRect();
                               return [r.left, r.top, r.right, r.bottom]; };
          return {node: box(node), tip: box(document.getElementById('tooltip'))};
        }""")
        if found is None:
            continue
        (nl, nt, nr, nb), (tl, tt, tr, tb) = found["node"], found["tip"]
        if nr + 16 + (tr - tl) <= 1280 - 4 or nl - 16 - (tr - tl) >= 4:  # (room on a side)
            assert tr <= nl or tl >= nr or tb <= nt or tt >= nb, found
            beside.append(tl >= nr)
    assert True in beside and False in beside  # (both sides met: d2l_mlp's L at the right)
    assert errors == []
    page.close()


def test_a_press_on_a_value_half_off_the_stage_leaves_the_view(example, browser, tmp_path):
    """A press of the mouse focuses a value (its details come with the focus) but does
    not bring it into view as Tab does: a drag begun on it pans from where it was."""
    page, _, _, errors = open_page(browser, tmp_path, example("d2l_mlp"), "d2l_mlp")
    page.mouse.move(640, 250)
    for _ in range(4):
        page.mouse.wheel(0, -300)
    half = page.evaluate("""() => {
      const s = document.getElementById('stage').getBoundingClientRect();
      for (const node of document.querySelectorAll('#stage g.node.value')) {
        const r = node.getBoundingClientRect();
        const x = Math.max(r.left, s.left) + 3, y = (Math.max(r.top, s.top) +
          Math.min(r.bottom, s.bottom)) / 2;
        if ((r.left < s.left || r.right > s.right) && x < s.right - 3 && y > s.top &&
            y < s.bottom && document.elementFromPoint(x, y).closest('g.node') === node) {
          return [node.id, x, y];
        }
      }
      return null;
    }""")
    assert half is not None  # (zoomed in so, a value stands half off the stage)
    before = page.evaluate(VIEW)["view"]
    page.mouse.click(half[1], half[2])
    assert page.evaluate("() => document.activeElement.id") == half[0]
    assert page.evaluate(VIEW)["view"] == before
    assert errors == []
    page.close()


def test_the_address_follows_the_step_and_back_returns(example, browser, tmp_path):
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


def test_f_toggles_full_screen(example, browser, tmp_path):
    page, _, _, errors = open_page(browser, tmp_path, example("add_mul"), "add_mul")
    page.keyboard.press("f")
    page.wait_for_function("() => document.fullscreenElement !== null")
    assert page.evaluate("() => document.fullscreenElement.id") == "bpv"
    page.keyboard.press("f")
    page.wait_for_function("() => document.fullscreenElement === null")
    assert errors == []


def test_the_books_objective_is_readable_at_1280_by_720(example, browser, tmp_path):
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
  const name = tip.querySelector('.name');
  return {hidden: tip.hidden, name: name && name.textContent,
          data: cells('table.data'), grad: cells('table.grad'),
          sources: [...tip.querySelectorAll('.sources li:not(.sum)')].map(li => li.textContent),
          sum: tip.querySelector('.sources .sum') !== null};
}"""


def _number(text: str) -> float:
    return float(text.replace("−", "-"))


def _entries(x) -> list[float]:
    return [float(v) for v in np.asarray(x, dtype=np.float64).ravel()]


def test_hover_and_focus_show_a_value_whole_and_where_its_gradient_came_from(browser, tmp_path):
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


def test_a_drag_pans_and_selects_no_text(example, browser, tmp_path):
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
    assert page.evaluate(VIEW)["view"] != before["view"]
    assert errors == []
    page.close()


# Every number drawn now (in value boxes, on badges and on the page's own labels of
# the current edges), its size in screen pixels.
NUMBER_SIZES = """() => {
  const sizes = [];
  for (const text of document.querySelectorAll(
      '#stage g.node.value text, #stage g.badge text, #stage .overlay-label text')) {
    if (!/^[−\\d.]+$/.test(text.textContent.trim())) continue;
    const box = text.getBoundingClientRect();
    if (!box.width) continue;
    sizes.push(parseFloat(text.getAttribute('font-size')) * text.getScreenCTM().a);
  }
  return sizes;
}"""


def test_every_number_is_readable_at_every_step(example, browser, tmp_path):
    G = example("d2l_objective")
    page, _, _, errors = open_page(browser, tmp_path, G, "objective")
    smallest = []
    for step in range(len(G.graph["backward_order"]) + 1):
        if step:
            page.keyboard.press("ArrowRight")
        smallest.append(min(page.evaluate(NUMBER_SIZES)))
    # The last step's x → @ contribution, a label of the page's, as large as draw's
    # contributions on the fork's badges beside it.
    sizes = """(selector) => [...document.querySelectorAll(selector)].filter(t => t.textContent
      .trim()).map(t => parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a)"""
    labels = page.evaluate(sizes, "#stage .overlay-label text")
    badges = page.evaluate(sizes, "#stage g.badge.contribution text")
    assert labels and badges and min(labels) >= min(badges) - 0.01
    assert min(smallest) >= 12.5, smallest
    assert errors == []
    page.close()


PENDING = """() => [...document.querySelectorAll('#stage g.badge.pending-contribution')].map(b => {
  const visible = [...b.children].filter(c => !c.classList.contains('badge-bridge') &&
    getComputedStyle(c).visibility !== 'hidden');
  const bridge = b.querySelector('.badge-bridge');
  const into = document.getElementById(b.id + '/in').querySelector('path');
  const out = document.getElementById(b.id + '/out').querySelector('path');
  const a = into.getPointAtLength(into.getTotalLength()), z = out.getPointAtLength(0);
  const s = bridge && bridge.getPointAtLength(0), e = bridge && bridge.getPointAtLength(
    bridge.getTotalLength());
  return {id: b.id, visible: visible.length, joins: !!bridge &&
    Math.hypot(s.x - a.x, s.y - a.y) < 0.01 && Math.hypot(e.x - z.x, e.y - z.y) < 0.01};
})"""


def test_a_forks_badges_appear_at_their_step_and_not_before(example, browser, tmp_path):
    G = example("fork")
    page, _, _, errors = open_page(browser, tmp_path, G, "fork")
    forks = sorted(f"{u}->{v}#{k}" for u, v, k in G.edges(keys=True)
                   if G.nodes[u]["kind"] == "value" and G.out_degree(u) == 2)
    pending = page.evaluate(PENDING)
    # Before their step: no box, the edge drawn straight through where it will be.
    assert sorted(p["id"] for p in pending) == forks
    assert all(p["visible"] == 0 and p["joins"] for p in pending)
    page.keyboard.press("ArrowRight")  # c = b·b: both shares of b
    assert sorted(p["id"] for p in page.evaluate(PENDING)) == forks[:2]
    shown = page.locator("g.badge.contribution text").all_text_contents()
    assert sorted(t for t in shown if t.strip()) == ["6", "6"]
    page.keyboard.press("ArrowLeft")
    assert all(p["visible"] == 0 and p["joins"] for p in page.evaluate(PENDING))
    assert errors == []
    page.close()


def test_dead_entries_are_framed_not_only_coloured(example, browser, tmp_path):
    G = example("d2l_mlp")
    page, _, _, errors = open_page(browser, tmp_path, G, "mlp")
    page.keyboard.press("End")
    dead_fill = THEMES["light"].dead_fill
    frames = page.evaluate(f"""() => [...document.querySelectorAll(
      '#stage polygon[fill="{dead_fill}"]')].map(p => [p.closest('g[id]').id,
      getComputedStyle(p).strokeDasharray])""")
    # z's dead entry, W1's dead row and the edge into the dead ReLU, and the legend's key.
    assert {node for node, _ in frames} >= {"v1", "v3", "legend"}
    assert all(dashes not in ("none", "") for _, dashes in frames)
    # The page's own label of the contribution into the dead ReLU (step 6) frames it too.
    page.goto(page.url.split("#")[0] + "#step=6")
    labelled = page.evaluate("""() => [...document.querySelectorAll('.overlay-label text')]
      .map(t => [t.textContent, t.previousElementSibling.classList.contains('dead-frame') &&
                 getComputedStyle(t.previousElementSibling).strokeDasharray !== 'none'])""")
    assert labelled == [["0", True], ["2", False]]  # z = [−1; 2]: the first unit is dead
    assert errors == []
    page.close()


def test_every_control_is_labelled_and_the_caption_is_announced(example, browser, tmp_path):
    G = example("d2l_mlp")
    for practice in (False, True):
        path = render_html(G, tmp_path / f"a11y-{practice}.html", practice=practice)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(path.as_uri())
        unnamed = page.evaluate("""() => [...document.querySelectorAll('button, input')]
          .filter(c => !(c.textContent.trim() || c.getAttribute('aria-label') ||
            (c.id && document.querySelector(`label[for="${c.id}"]`))))
          .map(c => c.id)""")
        assert unnamed == []
        assert page.get_attribute("#caption", "aria-live") == "polite"
        if practice:
            assert page.get_attribute("#practice-feedback", "aria-live") == "polite"
            assert page.evaluate("() => document.activeElement.id") == "answer"
        page.close()


def test_hover_tells_the_two_shares_of_a_plus_a_apart(example, browser, tmp_path):
    G = example("fork")  # b = a + a: both shares of a come back through the same +
    page, _, _, errors = open_page(browser, tmp_path, G, "fork")
    page.keyboard.press("End")
    page.hover("g#v0")
    tip = page.evaluate(TOOLTIP)
    shares = {G.edges[u, v, k]["arg"] + 1: g for u, v, k, g in G.out_edges("v0", keys=True,
                                                                         data="grad")}
    assert [(text.split("operand ")[1][0], _number(text.rsplit(": ", 1)[1]))
            for text in tip["sources"]] == [(str(arg), share) for arg, share in
                                            sorted(shares.items())]
    assert [_number(c) for c in tip["grad"]] == [G.nodes["v0"]["grad"]] and tip["sum"]
    assert errors == []
    page.close()


def test_the_caption_is_typeset_as_the_figure_names_its_boxes(example, browser, tmp_path):
    # The last step of the book's MLP: ∂L/∂W₁ with W in italics and 1 lowered, as the
    # box is named, its arrays in brackets as the boxes draw them; its text (read
    # aloud, copied) is the caption as written.
    page, _, _, errors = open_page(browser, tmp_path, example("d2l_mlp"), "d2l_mlp")
    page.keyboard.press("End")
    caption = page.evaluate("""() => {
        const c = document.getElementById('caption');
        return {text: c.textContent,
                italic: [...c.querySelectorAll('i')].map(e => e.textContent),
                lowered: [...c.querySelectorAll('sub')].map(e => e.textContent),
                arrays: [...c.querySelectorAll('.array .grid')].map(g => ({
                    entries: [...g.children].map(e => e.dataset.entry),
                    columns: getComputedStyle(g).gridTemplateColumns.split(' ').length,
                    height: g.getBoundingClientRect().height}))};
    }""")
    assert caption["text"].startswith("∂L/∂W1 = ∂L/∂z · xᵀ = [0; 2] · [1; 2]ᵀ = [0, 0; 2, 4]")
    assert {"L", "W", "z", "x"} <= set(caption["italic"]) and "1" in caption["lowered"]
    # [0; 2] and [1; 2] as columns, [0, 0; 2, 4] as two rows of two: set as matrices
    assert [(a["entries"], a["columns"]) for a in caption["arrays"][:3]] == [
        (["0", "2"], 1), (["1", "2"], 1), (["0", "0", "2", "4"], 2)]
    assert all(a["height"] > 30 for a in caption["arrays"][:3])  # two lines tall
    assert errors == []


def test_a_steps_label_names_an_op_once_where_its_symbol_is_its_name(browser, tmp_path):
    """"Step 1 of 2: sin", not "sin (sin)"; "× (mul)" keeps the name its symbol hides."""
    script = tmp_path / "sine.py"
    script.write_text("import torch\nx = torch.tensor(1.5, requires_grad=True)\n"
                      "f = torch.sin(x) * x\nf.backward()\n")
    page, _, _, errors = open_page(browser, tmp_path, graph_of_script(script, quiet=True),
                                   "sine")
    labels = []
    for _ in range(2):
        page.keyboard.press("ArrowRight")
        labels.append(page.text_content("#step-label"))
    assert labels == ["Step 1 of 2: × (mul)", "Step 2 of 2: sin"]
    assert errors == []
