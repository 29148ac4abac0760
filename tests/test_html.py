"""The step-through HTML page: self-contained, and in a real browser exactly the IR's steps."""

from __future__ import annotations

import html as html_module
import json
import os
import pathlib
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from backpropviz import Value
from backpropviz.captions import step_captions
from backpropviz.diagram import draw
from backpropviz.errors import DrawError, OutputError
from backpropviz.formatting import format_array, format_number
from backpropviz.html import Page, render_html, step_through, to_html
from backpropviz.ir import to_networkx
from backpropviz.names import value_names
from backpropviz.steps import backward_steps
from backpropviz.style import THEMES

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
CHROMIUM = pathlib.Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def drawn(x) -> list[str]:
    """The texts a number or array is drawn with, row by row (a true minus sign)."""
    return [format_number(float(cell)).replace("-", "\u2212") if _is_number(cell) else cell
            for row in format_array(x) for cell in row]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def expected_states(G) -> list[dict]:
    """What every step must show, from the IR alone: the highlighted op, the
    gradient texts of every value that has one, the contribution texts on
    edges, and the caption. Constants show no gradient."""
    order = G.graph["backward_order"]
    constants = {v for v, role in G.nodes(data="role") if role == "const"}
    captions = step_captions(G)
    forks = set()
    for value, kind in G.nodes(data="kind"):
        if kind == "value":
            sent = {(u, v, k) for u, v, k, g in G.out_edges(value, keys=True, data="grad")
                    if g is not None}
            if len(sent) >= 2:
                forks |= sent
    states = [{"op": [], "grads": {v: drawn(g) for v, g in G.graph["seeds"].items()},
               "edges": {}, "caption": "\n".join(captions[0].worked)}]
    processed: set = set()
    for index, step in enumerate(backward_steps(G), start=1):
        processed |= set(step.edges)
        shown = {edge for edge in processed if edge in forks or edge in step.edges}
        states.append({
            "op": [order[index - 1]],
            "grads": {v: drawn(g) for v, g in step.grads.items() if v not in constants},
            "edges": {f"{u}->{v}#{k}": drawn(G.edges[u, v, k]["grad"]) for u, v, k in shown
                      if G.edges[u, v, k]["grad"] is not None and u not in constants},
            "caption": "\n".join(captions[index].worked),
        })
    return states


# ---------------------------------------------------------------- without a browser


def test_page_is_self_contained_and_small(example):
    page = to_html(example("d2l_mlp"))
    assert len(page.encode()) < 300_000
    # Nothing to fetch: the only reference is the empty data: favicon that
    # stops the browser asking the server for /favicon.ico.
    references = re.findall(r"""\b(?:src|href|xlink:href)\s*=\s*["']([^"']*)""", page)
    assert references == ["data:,"]
    assert "@import" not in page and "url(" not in page
    assert "<script src" not in page
    data = json.loads(re.search(r'<script type="application/json" id="bpv-data">(.*?)</script>',
                                page, re.S).group(1))
    assert [step["op"] for step in data["steps"][1:]] == \
        example("d2l_mlp").graph["backward_order"]


def test_embedded_state_is_the_irs(example):
    G = example("fork")
    page = to_html(G)
    data = json.loads(re.search(r'id="bpv-data">(.*?)</script>', page, re.S).group(1))
    assert data["steps"][0]["grads"] == {v: [[format_number(g)]]
                                         for v, g in G.graph["seeds"].items()}
    for index, (state, step) in enumerate(zip(data["steps"][1:], backward_steps(G),
                                              strict=True), start=1):
        assert state["edges"] == [f"{u}->{v}#{k}" for u, v, k in step.edges]
        assert state["accumulated"] == list(step.accumulated)
        # Each value's gradients are carried once, whole, in its details: the one a
        # step shows is the last one recorded by then.
        known = {v: [cells for at, cells in detail["grads"] if at <= index][-1]
                 for v, detail in data["details"].items()
                 if any(at <= index for at, _ in detail["grads"])}
        assert known == {v: [[cell.replace("-", "\u2212") for cell in row]
                             for row in format_array(g, 15, 64)] for v, g in step.grads.items()}


def test_render_html_writes_atomically(example, tmp_path):
    G = example("fork")
    path = render_html(G, tmp_path / "sweep.html", theme="dark")
    assert path == tmp_path / "sweep.html"
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    with pytest.raises(DrawError, match="theme"):
        render_html(G, tmp_path / "bad.html", theme="sepia")
    with pytest.raises(OutputError, match="cannot write"):
        render_html(G, tmp_path / "missing" / "sweep.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.html"]  # no leftovers


def test_a_graph_without_backward_has_only_step_zero():
    from backpropviz import Value

    a = Value(2.0, label="a")
    page = to_html(to_networkx(a * a))
    assert 'data-steps="0"' in page and "forward pass only" in page


# ---------------------------------------------------------------- in a browser


# What the page shows now, read from the DOM: every visible text in a gradient
# or dead-ReLU colour is a gradient entry (values) or a contribution (edges).
READ_STATE = """([grad, dead]) => {
  const numbers = (group) => [...group.querySelectorAll('text')]
    .filter(t => [grad, dead].includes(t.getAttribute('fill')) && t.textContent.trim())
    .map(t => t.textContent);
  const state = {step: document.getElementById('bpv').dataset.step, grads: {}, edges: {},
    op: [...document.querySelectorAll('g.node.op.current')].map(g => g.id),
    caption: document.getElementById('caption').textContent};
  for (const g of document.querySelectorAll('g.node.value')) {
    const texts = numbers(g); if (texts.length) state.grads[g.id] = texts; }
  for (const g of document.querySelectorAll('g.edge, g.node.badge')) {
    const texts = numbers(g); if (texts.length) state.edges[g.id] = texts; }
  return state; }"""


def open_page(browser, tmp_path, G, name, *, theme="light", width=1280, height=720):
    path = render_html(G, tmp_path / f"{name}-{theme}.html", theme=theme)
    page = browser.new_page(viewport={"width": width, "height": height})
    requests, errors = [], []
    page.on("request", lambda request: requests.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    return page, path, requests, errors


def read_state(page, theme="light"):
    palette = THEMES[theme]
    state = page.evaluate(READ_STATE, [palette.grad, palette.dead_text])
    state["step"] = int(state["step"])
    return state


@pytest.mark.parametrize(("name", "theme"), [("d2l_mlp", "light"), ("fork", "light"),
                                             ("d2l_mlp", "dark")])
def test_every_step_shows_exactly_the_irs_state(example, browser, tmp_path, name, theme):
    G = example(name)
    expected = expected_states(G)
    page, path, requests, errors = open_page(browser, tmp_path, G, name, theme=theme)
    seen = []
    for index, want in enumerate(expected):
        if index:
            page.keyboard.press("ArrowRight")
        state = read_state(page, theme)
        assert state["step"] == index
        assert state["op"] == want["op"]
        assert state["grads"] == want["grads"], f"step {index}"
        assert state["edges"] == want["edges"], f"step {index}"
        assert state["caption"] == want["caption"]
        seen.append(state)
    page.keyboard.press("ArrowRight")  # past the end: stays at the last step
    assert read_state(page, theme) == seen[-1]
    for index in range(len(expected) - 2, -1, -1):  # previous undoes each step
        page.click("#prev")
        assert read_state(page, theme) == seen[index]
    assert requests == [path.as_uri()]  # no network, not even a favicon
    assert errors == []
    page.close()


# The numbers of each value box and each contribution badge, in a gradient or dead-ReLU
# colour, as the page shows them now.
READ_BOXES = """([grad, dead]) => Object.fromEntries(
  [...document.querySelectorAll('g.node.value, g.node.badge')].map(g => [g.id,
    [...g.querySelectorAll('text')].filter(t => [grad, dead].includes(t.getAttribute('fill'))
      && t.textContent.trim()).map(t => t.textContent)]).filter(([, texts]) => texts.length))"""


def figure_boxes(svg: str, theme: str = "light") -> dict[str, list[str]]:
    """READ_BOXES, read off a figure's SVG."""
    palette = THEMES[theme]
    ns = "{http://www.w3.org/2000/svg}"
    boxes = {}
    for group in ET.fromstring(svg).iter(f"{ns}g"):
        kinds = (group.get("class") or "").split()
        if "node" in kinds and ("value" in kinds or "badge" in kinds):
            texts = [text.text for text in group.iter(f"{ns}text")
                     if text.get("fill") in (palette.grad, palette.dead_text)
                     and (text.text or "").strip()]
            if texts:
                boxes[group.get("id")] = texts
    return boxes


@pytest.mark.parametrize("name", ["fork", "d2l_mlp", "mlp3"])
def test_the_pages_step_k_shows_the_numbers_of_the_step_k_figure(example, browser, tmp_path,
                                                                  name):
    # The page draws its steps together (one layout, each look drawn once); the figure
    # of step k is drawn on its own, by dot: each box must read the same at every step.
    G = example(name)
    page, _, _, errors = open_page(browser, tmp_path, G, name)
    palette = THEMES["light"]
    for step in range(len(G.graph["backward_order"]) + 1):
        if step:
            page.keyboard.press("ArrowRight")
        shown = page.evaluate(READ_BOXES, [palette.grad, palette.dead_text])
        assert shown == figure_boxes(draw(G, step=step).svg), f"step {step}"
    assert errors == []
    page.close()


def test_controls_keyboard_and_slider(example, browser, tmp_path):
    G = example("d2l_mlp")
    last = len(G.graph["backward_order"])
    page, _, _, errors = open_page(browser, tmp_path, G, "d2l_mlp")

    def step():
        return int(page.get_attribute("#bpv", "data-step"))

    page.keyboard.press("End")
    assert step() == last
    page.keyboard.press("Home")
    assert step() == 0
    page.click("#next")
    page.keyboard.press("ArrowRight")
    assert step() == 2
    page.keyboard.press("ArrowLeft")
    assert step() == 1
    page.click("#last")
    assert step() == last
    page.click("#first")
    assert step() == 0
    page.fill("#slider", "4")
    assert step() == 4
    assert page.text_content("#counter") == f"4 / {last}"
    # Space plays (after a click, the focus is back on the page): a step each 1.5 s,
    # passed on the browser's clock (playwright's) rather than waited out; and pauses.
    page.clock.install()
    page.keyboard.press("Space")
    assert "playing" in page.get_attribute("#bpv", "class")
    page.clock.run_for(1400)
    assert step() == 4
    page.clock.run_for(200)
    assert step() == 5
    page.clock.run_for(1500)
    assert step() == 6
    page.keyboard.press("Space")
    assert "playing" not in (page.get_attribute("#bpv", "class") or "")
    page.clock.run_for(3000)
    assert step() == 6
    assert errors == []
    page.close()


def test_hover_shows_whole_value_and_gradient(example, browser, tmp_path):
    G = example("d2l_mlp")
    page, _, _, _ = open_page(browser, tmp_path, G, "d2l_mlp")
    page.hover("g#v1")  # W1
    tooltip = page.locator("#tooltip")
    assert tooltip.is_visible()
    assert "W₁" in tooltip.text_content() and "not computed yet" in tooltip.text_content()
    page.keyboard.press("End")
    page.mouse.move(0, 0)
    page.hover("g#v1")
    cells = page.locator("#tooltip table.grad td").all_text_contents()
    assert cells == drawn(G.nodes["v1"]["grad"]) == ["0", "0", "2", "4"]
    data_cells = page.locator("#tooltip table.data td").all_text_contents()
    assert data_cells == drawn(G.nodes["v1"]["data"])
    page.close()


# Where the page's own contribution labels and every outline of a box, an op or a
# badge drawn lie on the screen (the browser's boxes, not the page's reckoning), and
# the pairs that overlap by more than half a pixel each way.
READ_COVERED = """() => {
  const rect = (el) => { const r = el.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom]; };
  const labels = [...document.querySelectorAll('#stage .overlay-label > rect:not(.dead-frame)')]
    .map(r => [r.closest('g.edge').id, rect(r)]);
  const boxes = [...document.querySelectorAll('#stage g.node')]
    .filter(g => !g.classList.contains('pending-contribution'))
    .map(g => [g.id, g.querySelector('path, polygon, ellipse')]).filter(([, o]) => o)
    .map(([id, outline]) => [id, rect(outline)]);
  const covered = [];
  labels.forEach(([edge, l], i) => {
    const others = boxes.concat(labels.filter((_, j) => j !== i));
    for (const [id, b] of others) {
      const wide = Math.min(l[2], b[2]) - Math.max(l[0], b[0]);
      const high = Math.min(l[3], b[3]) - Math.max(l[1], b[1]);
      if (wide > 0.5 && high > 0.5) covered.push([edge, id, wide, high]);
    }
  });
  return {labels: labels.length, covered: covered}; }"""


@pytest.mark.parametrize("name", ["add_mul", "scalar_neuron", "d2l_mlp", "mlp3"])
def test_no_contribution_the_page_labels_covers_a_box_at_any_step(example, browser, tmp_path,
                                                                  name):
    # The page labels the contributions on the current op's edges (draw labels a
    # fork's only, and its layout keeps no room for the rest): on short edges between
    # large boxes (mlp3's matrices) a label at the edge's middle covered both ends.
    G = example(name)
    page, _, _, errors = open_page(browser, tmp_path, G, name)
    labelled = 0
    for index in range(len(G.graph["backward_order"]) + 1):
        if index:
            page.keyboard.press("ArrowRight")
        found = page.evaluate(READ_COVERED)
        assert found["covered"] == [], f"step {index}"
        labelled += found["labels"]
    assert labelled >= len(G.graph["backward_order"])  # (it did label them)
    assert errors == []
    page.close()


@pytest.mark.parametrize(("theme", "width", "height"), [("light", 1280, 720),
                                                        ("dark", 1920, 1080)])
def test_fits_a_slide_and_shows_the_highlight(example, browser, tmp_path, theme, width, height):
    G = example("d2l_mlp")
    page, _, _, _ = open_page(browser, tmp_path, G, "d2l_mlp", theme=theme,
                              width=width, height=height)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    for selector in ("#stage svg", "#caption", "#controls"):
        box = page.locator(selector).bounding_box()
        assert box["x"] >= 0 and box["y"] >= 0, selector
        assert box["x"] + box["width"] <= width and box["y"] + box["height"] <= height, selector
    palette = THEMES[theme]
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb({}, {}, {})".format(*_rgb(palette.background))
    shot = tmp_path / f"step-{theme}.png"
    page.screenshot(path=str(shot))
    from PIL import Image

    # The highlighted op is drawn in the highlight colour, somewhere near where
    # the browser put the current op.
    op = page.locator("g.node.op.current").bounding_box()
    image = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    x0, y0 = int(op["x"]), int(op["y"])
    patch = image[y0:y0 + int(op["height"]) + 1, x0:x0 + int(op["width"]) + 1]
    distance = np.abs(patch - np.array(_rgb(palette.highlight_line))).sum(axis=2)
    assert (distance < 40).sum() > 20
    page.close()


def _rgb(color: str) -> tuple[int, int, int]:
    return tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))


def test_step_through_shows_inline_in_a_notebook_and_saves(tmp_path):
    a = Value(3.0)
    b = a + a
    c = b * b
    c.backward()
    page = step_through(c, names={"a": a, "b": b, "c": c})
    assert isinstance(page, Page)
    frame = page._repr_html_()
    assert frame.startswith('<iframe srcdoc="') and 'style="width:100%;height:560px' in frame
    srcdoc = frame.split('srcdoc="', 1)[1].split('" style=', 1)[0]
    assert html_module.unescape(srcdoc) == page.html == to_html(
        to_networkx(c, names={"a": a, "b": b, "c": c}))
    path = page.save(tmp_path / "fork.html")
    assert path.read_text(encoding="utf-8") == page.html
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's private 0600


READ_MEMORY = """() => {
  const ids = (selector) => [...document.querySelectorAll(selector)].map(g => g.id).sort();
  const node = document.querySelector('g.node.held > :first-child');
  // What each kept value draws in the colour of the mark: its box's outline, nothing else.
  const saved = getComputedStyle(document.getElementById('memory-fill')).backgroundColor;
  const marked = [...document.querySelectorAll('g.node.held')].map(g => {
    const parts = [...g.querySelectorAll('*')].filter(e => getComputedStyle(e).stroke === saved);
    const box = g.getBBox(), part = parts.length && parts[0].getBBox();
    return parts.length === 1 && Math.abs(part.width - box.width) < 1 &&
      Math.abs(part.height - box.height) < 1; });
  return {text: document.getElementById('memory-text').textContent,
    held: ids('g.node.held'), freed: ids('g.node.freed'), now: ids('#memory-spark .now'),
    fill: document.getElementById('memory-fill').getBoundingClientRect().width /
          document.getElementById('memory-bar').clientWidth,
    stroke: node ? getComputedStyle(node).stroke : null, outlines: marked}; }"""


def test_the_memory_bar_follows_the_step_and_marks_the_values_still_kept(example, browser,
                                                                         tmp_path):
    G = example("d2l_mlp")
    ids = {name.text: str(node) for node, name in value_names(G).items()}
    page, _, requests, errors = open_page(browser, tmp_path, G, "memory", width=1920,
                                          height=1080)
    # Off until asked for: no outline, no bar.
    assert page.evaluate(READ_MEMORY)["held"] == [] and page.locator("#memory").is_hidden()
    assert page.get_attribute("#memory-toggle", "aria-pressed") == "false"
    page.click("#memory-toggle")
    assert page.get_attribute("#memory-toggle", "aria-pressed") == "true"
    assert page.locator("#memory-key").is_visible()
    # Exactly the values the figure marks as saved: the constant 2 of L / 2 is kept
    # too, but the figure gives it no mark, so neither does the overlay.
    at_peak = sorted(ids[n] for n in ("W1", "x", "z", "W2", "h", "o − y", "Σ(o − y)²"))
    figure = draw(G).svg
    assert sorted(re.findall(r'<g id="(v\d+)" class="node value[^"]* stored', figure)) == at_peak
    # After the forward pass all 120 bytes are kept (counted by hand in test_memory).
    state = page.evaluate(READ_MEMORY)
    assert state["text"] == "after the forward pass: 120 bytes kept for backward (the peak)"
    assert state["held"] == at_peak and state["freed"] == []
    assert state["outlines"] == [True] * len(at_peak)
    assert state["fill"] == pytest.approx(1, abs=0.01)
    assert state["now"] == ["spark-7"]  # the last of the 7 forward steps
    red, green, blue = (int(THEMES["light"].saved[i:i + 2], 16) for i in (1, 3, 5))
    assert state["stroke"] == f"rgb({red}, {green}, {blue})"
    for _ in range(5):  # ÷, Σ, (·)², −, then o = W2 h: W2 and h are read no more
        page.keyboard.press("ArrowRight")
    state = page.evaluate(READ_MEMORY)
    assert state["text"] == ("after backward step 5: 64 bytes kept for backward "
                             "(peak 120 bytes); freed: W₂, h")
    assert state["held"] == sorted(ids[n] for n in ("W1", "x", "z"))
    assert state["freed"] == sorted(ids[n] for n in ("W2", "h"))
    assert state["fill"] == pytest.approx(64 / 120, abs=0.01)
    assert state["now"] == ["spark-12"]
    page.keyboard.press("End")
    state = page.evaluate(READ_MEMORY)
    assert state["text"].startswith("after backward step 7: 0 bytes")
    assert state["held"] == [] and state["fill"] == 0 and state["now"] == ["spark-14"]
    page.keyboard.press("Home")
    page.keyboard.press("m")  # off again: the marks go
    assert page.evaluate(READ_MEMORY)["held"] == [] and page.locator("#memory").is_hidden()
    assert errors == [] and all(url.startswith("file:") for url in requests)


def test_the_pages_svg_is_written_as_elementtree_writes_it(example):
    # The page writes the SVG of each look with a serializer of its own (for speed):
    # element by element, text, tails, escapes (&, <, quotes, newlines in a value) and
    # the xlink prefix are ElementTree's, less the namespace declarations left to <svg>
    # and what the page's text inherits: the drawing's font (set on <svg>), the start anchor.
    from backpropviz.html import _serialize

    svg = draw(example("d2l_objective"), fit="1240x500").svg
    root = ET.fromstring(svg)
    odd = ET.SubElement(root, "{http://www.w3.org/2000/svg}text", {
        "data-x": 'a "b" <c> & d\n\te\r', "{http://www.w3.org/1999/xlink}href": "#v1"})
    odd.text, odd.tail = "x < y & z > w", "\n"
    ET.SubElement(odd, "{http://www.w3.org/2000/svg}tspan").tail = ""
    ET.register_namespace("", "http://www.w3.org/2000/svg")
    ET.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    for element in [root, *root.iter()]:
        expected = ET.tostring(element, encoding="unicode").replace(
            ' xmlns="http://www.w3.org/2000/svg"', "").replace(
            ' xmlns:xlink="http://www.w3.org/1999/xlink"', "").replace(
            ' font-family="Helvetica,Arial,sans-serif"', "").replace(' text-anchor="start"', "")
        assert _serialize(element) == expected
    assert 'xlink:href="#v1"' in _serialize(odd)
