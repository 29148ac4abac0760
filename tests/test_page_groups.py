"""Groups that open in place on the step-through page, in Chromium: the rest of the
drawing kept, the steps walking the group's own ops with the engine's numbers, the
open groups in the address."""

from __future__ import annotations

import math
import os
import textwrap
from pathlib import Path

import pytest

from backpropviz.output import write
from backpropviz.script import graph_of_script
from backpropviz.style import THEMES

# Every node's box outside an opened group, in the graph's coordinates (the view
# refits when a group opens, so screen positions would move for that alone).
BOXES = """() => {
  const graph = document.querySelector('#stage svg > g');
  const back = graph.getCTM().inverse();
  const boxes = {};
  for (const node of graph.querySelectorAll(':scope > g.node')) {
    if (getComputedStyle(node).display === 'none') continue;
    const b = node.getBBox(), m = back.multiply(node.getCTM());
    boxes[node.id] = [b.x * m.a + m.e, b.y * m.d + m.f, b.width, b.height];
  }
  return boxes;
}"""

FRAME = """() => {
  const graph = document.querySelector('#stage svg > g');
  const rect = graph.querySelector('.group-frame rect');
  if (!rect) return null;
  return ['x', 'y', 'width', 'height'].map(k => Number(rect.getAttribute(k)));
}"""

# The gradient entries drawn in each value box inside the open group, by the value's
# name as the page names it (the names are the page's, the numbers the drawing's).
INSIDE = """(grad) => {
  const found = {};
  for (const node of document.querySelectorAll('.opened-group g.node')) {
    const shown = (t) => getComputedStyle(t).visibility !== 'hidden';
    const value = window.bpv.data.values[node.id];
    if (!value) continue;
    found[value.name] = [...node.querySelectorAll('text')]
      .filter(t => t.getAttribute('fill') === grad && t.textContent.trim() && shown(t))
      .map(t => t.textContent.trim());
  }
  return found;
}"""

STATE = """() => ({step: document.getElementById('step-label').textContent,
  counter: document.getElementById('counter').textContent, hash: location.hash,
  frames: document.querySelectorAll('.opened-group').length})"""


def _page(browser, tmp_path, script, name, hash="", **options):
    path = write(graph_of_script(script, quiet=True), tmp_path / f"{name}.html", **options)
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri() + hash)
    return page, path, errors


def _boxes(page):
    """BOXES, to a hundredth of a point (the inverse of a transform is not exact)."""
    return {node: [round(n, 2) + 0.0 for n in box] for node, box in page.evaluate(BOXES).items()}


def _group_op(page, name):
    return page.evaluate("(name) => Object.keys(window.bpv.data.groups).find("
                         "id => window.bpv.data.groups[id].name === name)", name)


def _click(page, gid):
    box = page.locator(f'[id="{gid}"]').bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def _shifts(before, after):
    """Each node's move, rounded to a hundredth of a point."""
    assert set(after) == set(before)
    return {node: (round(after[node][0] - before[node][0], 2),
                   round(after[node][1] - before[node][1], 2),
                   round(after[node][2] - before[node][2], 2),
                   round(after[node][3] - before[node][3], 2)) for node in before}


def _overlap(a, b):
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


D2L_FIGURE = Path(__file__).resolve().parent.parent / "examples" / "d2l_figure.py"


def test_a_group_opens_where_it_stood_and_closes_leaving_the_layout_as_it_was(browser, tmp_path):
    page, _, errors = _page(browser, tmp_path, D2L_FIGURE, "figure")
    gid = _group_op(page, "l")
    before = _boxes(page)
    operator = before.pop(gid)
    _click(page, gid)
    opened = _boxes(page)
    assert gid not in opened and page.evaluate(STATE)["frames"] == 1
    moves = _shifts(before, opened)
    # Nothing changes size; what lies before the operator stays, and everything
    # else moves by one shift a side: beyond it (to the right), or beside it.
    assert {move[2:] for move in moves.values()} == {(0, 0)}
    assert len({move[:2] for move in moves.values()}) <= 3
    beyond = set()
    for node, box in before.items():
        if box[0] + box[2] <= operator[0]:
            assert moves[node][:2] == (0, 0), node
        if box[0] >= operator[0] + operator[2]:
            beyond.add(moves[node][:2])
    # (one shift for all beyond it, J and the + of J = L + s: to the right)
    assert len(beyond) == 1 and next(iter(beyond))[0] > 0 and next(iter(beyond))[1] == 0
    frame = page.evaluate(FRAME)
    assert not [node for node, box in opened.items() if _overlap(box, frame)]
    page.locator(".group-frame rect").click(position={"x": 4, "y": 4})
    assert page.evaluate(STATE)["frames"] == 0
    after = _boxes(page)
    after.pop(gid)
    assert after == before
    assert errors == []


def test_a_group_opened_in_a_drawing_folded_into_rows_moves_the_other_rows_aside(browser,
                                                                                 tmp_path):
    """A ResNet-like model at --depth 1 is folded into two rows on the page. Opened, a block
    in the first row is taller than the row: the second row moves down out of its frame
    (it had moved right, onto the frame and onto the first row's boxes)."""
    pytest.importorskip("torch")
    script = Path(__file__).resolve().parent / "torch_scripts" / "nested_blocks.py"
    page, _, errors = _page(browser, tmp_path, script, "nested", depth=1)
    rows = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll(
        '#stage svg > g > g.node[data-row]')].map(node => [node.id, node.dataset.row]))""")
    gid = _group_op(page, "net.block1")
    assert set(rows.values()) == {"0", "1"} and rows[gid] == "0"
    before = _boxes(page)
    _click(page, gid)
    opened = _boxes(page)
    frame = page.evaluate(FRAME)
    assert frame[3] > before[gid][3] * 3  # (the block's inside, taller than its operator)
    assert not [node for node, box in opened.items() if _overlap(box, frame)]
    overlapping = [(a, b) for a in opened for b in opened if a < b
                   and _overlap(opened[a], opened[b]) and not _overlap(before[a], before[b])]
    assert overlapping == []
    second = {node for node, row in rows.items() if row == "1"}
    moves = {_shifts({n: before[n] for n in opened}, opened)[node][:2] for node in second}
    assert len(moves) == 1 and next(iter(moves))[0] == 0 and next(iter(moves))[1] > 0
    assert errors == []


# The legend's box, and every open group's frame, in the graph's coordinates (as BOXES).
LEGEND = """() => {
  const graph = document.querySelector('#stage svg > g');
  const legend = document.getElementById('legend');
  const b = legend.getBBox(), m = graph.getCTM().inverse().multiply(legend.getCTM());
  return [b.x * m.a + m.e, b.y * m.d + m.f, b.width, b.height];
}"""

FRAMES = """() => [...document.querySelectorAll('#stage svg > g .group-frame rect')].map(
  rect => ['x', 'y', 'width', 'height'].map(k => Number(rect.getAttribute(k))))"""


def test_the_legend_stays_under_the_drawing_as_groups_open_and_comes_back(browser, tmp_path):
    """Opened, a group moves the operators beside it aside, some of them down: the
    legend under the drawing goes down with them, so that nothing stands on it (the
    matmul beside the regularizer's group stood on its words "saved for backward"),
    and it is back in its place when the groups close."""
    page, _, errors = _page(browser, tmp_path, D2L_FIGURE, "figure")
    laid_out = page.evaluate(LEGEND)
    gids = page.evaluate("Object.keys(window.bpv.data.groups)")
    assert len(gids) == 2
    for gid in gids:
        _click(page, gid)
    assert page.evaluate(STATE)["frames"] == 2
    legend = page.evaluate(LEGEND)
    drawn = [*_boxes(page).values(), *page.evaluate(FRAMES)]
    assert not [box for box in drawn if _overlap(box, legend)]
    assert legend[1] > laid_out[1] and legend[0] == pytest.approx(laid_out[0])
    for gid in gids:  # closed from their frames' corners, as a reader closes them
        page.locator(f'.opened-group[data-group="{gid}"] .group-frame rect').click(
            position={"x": 4, "y": 4})
    assert page.evaluate(STATE)["frames"] == 0
    assert page.evaluate(LEGEND) == pytest.approx(laid_out)
    assert errors == []


def test_opened_the_steps_walk_the_groups_ops_with_the_engines_numbers(browser, tmp_path):
    page, _, errors = _page(browser, tmp_path, D2L_FIGURE, "figure")
    gid = _group_op(page, "l")
    assert page.evaluate(STATE)["counter"] == "0 / 6"
    _click(page, gid)
    # Before any backward step nothing inside has a gradient yet.
    assert set(map(tuple, page.evaluate(INSIDE, THEMES["light"].grad).values())) == {()}
    # L = ((o - y)**2).sum() / 2 is four ops: the group's one step becomes four.
    assert page.evaluate(STATE)["counter"] == "0 / 9"
    symbols = []
    for _ in range(9):
        page.keyboard.press("ArrowRight")
        symbols.append(page.evaluate(STATE)["step"].split(": ", 1)[1])
    # J = L + s goes back through +, then s, then l's ops from the last to the first.
    assert symbols[2:6] == ["÷ (div)", "Σ (sum)", "(·)² (pow)", "− (sub)"]
    # By hand: o = W2 relu(W1 x) = -2, y = 0, so L = (o - y)²/2 = 2; ∂J/∂L = 1,
    # ∂J/∂Σ(o − y)² = 1/2, ∂J/∂(o − y)² = 1/2, ∂J/∂(o − y) = 2(o − y)/2 = -2 = ∂J/∂o.
    page.keyboard.press("Home")
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    inside = page.evaluate(INSIDE, THEMES["light"].grad)
    assert inside["L"] == ["1"]
    assert inside["Σ(o − y)²"] == ["0.5"]
    assert inside["(o − y)²"] == ["0.5"]
    assert inside["o − y"] == ["−2"]
    assert inside["o"] == ["−2"]
    assert errors == []


def test_the_address_restores_an_open_group_and_a_step(browser, tmp_path):
    page, path, errors = _page(browser, tmp_path, D2L_FIGURE, "figure")
    gid = _group_op(page, "l")
    _click(page, gid)
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    shown = page.evaluate(STATE)
    assert shown["hash"] == f"#step=4&open={gid}"
    again = browser.new_page(viewport={"width": 1280, "height": 720})
    again.goto(path.as_uri() + shown["hash"])
    assert again.evaluate(STATE) == shown
    assert _boxes(again) == _boxes(page)
    # Back from a closed group is the group open again, at the step it was closed at.
    page.locator(".group-frame rect").click(position={"x": 4, "y": 4})
    assert page.evaluate(STATE)["frames"] == 0
    page.go_back()
    assert page.evaluate(STATE) == shown
    assert errors == []


def test_the_keyboard_opens_and_closes_a_group_at_its_step(browser, tmp_path):
    page, _, errors = _page(browser, tmp_path, D2L_FIGURE, "figure", hash="#step=2")
    gid = _group_op(page, "s")
    assert page.evaluate(STATE)["step"] == "Step 2 of 6: s (group)"
    page.locator(f'[id="{gid}"]').focus()
    page.keyboard.press("Enter")
    # Opened at its own step, the page is at its first op: s = λ/2 · (‖W1‖² + ‖W2‖²)
    # goes back through × first, of four ops.
    assert page.evaluate(STATE)["frames"] == 1
    assert page.evaluate(STATE)["step"] == "Step 2 of 9: × (mul)"
    # the keyboard is on the frame that opened: Enter closes it again, no Tab needed
    assert page.evaluate("document.activeElement.getAttribute('class')") == "group-frame"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    # Closed from inside, the page is at the group's step again, the operator focused.
    assert page.evaluate(STATE)["frames"] == 0
    assert page.evaluate(STATE)["step"] == "Step 2 of 6: s (group)"
    assert page.evaluate("document.activeElement.id") == gid
    assert errors == []


LAYER = """\
import torch
from torch import nn


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.tensor([[0.5, -1.0], [2.0, 0.25]]))
        self.b = nn.Parameter(torch.tensor([0.1, -0.2]))

    def forward(self, x):
        return torch.tanh(x @ self.W + self.b)


layer = Layer()
x = torch.tensor([[1.0, 2.0]])
y = torch.tensor([[0.0, 1.0]])
loss = ((layer(x) - y) ** 2).sum()
loss.backward()
"""


def test_a_torch_module_opens_with_autograds_gradients(browser, tmp_path):
    torch = pytest.importorskip("torch")
    script = tmp_path / "layer.py"
    script.write_text(textwrap.dedent(LAYER))
    page, _, errors = _page(browser, tmp_path, script, "layer", modules=True)
    gid = _group_op(page, "layer")
    _click(page, gid)
    page.keyboard.press("End")
    inside = page.evaluate(INSIDE, THEMES["light"].grad)
    # The reference: plain autograd on the same numbers.
    W = torch.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    b = torch.tensor([0.1, -0.2], requires_grad=True)
    ((torch.tanh(torch.tensor([[1.0, 2.0]]) @ W + b) - torch.tensor([[0.0, 1.0]])) ** 2
     ).sum().backward()
    drawn = [float(cell.replace("−", "-")) for cell in inside["layer.W"]]
    assert len(drawn) == 4
    for got, want in zip(drawn, W.grad.flatten().tolist(), strict=True):
        assert math.isclose(got, want, rel_tol=1e-3, abs_tol=1e-6)
    assert errors == []


def test_an_open_groups_captions_name_what_the_whole_graph_differentiates():
    # Inside l of the book's figure the backward pass still differentiates the whole
    # objective (here named total): its captions say ∂total/∂…, not a made-up letter.
    from backpropviz.captions import step_captions
    from backpropviz.page_groups import inside
    from backpropviz.views import closed_groups

    G = graph_of_script(D2L_FIGURE, quiet=True)
    (J,) = G.graph["roots"]
    G.nodes[J]["label"] = "total"  # (a name no letter rule would guess)
    view = closed_groups(G)
    (l_op,) = [op for op, attrs in view.nodes(data=True) if attrs.get("symbol") == "l"]
    members = [op for op, attrs in G.nodes(data=True)
               if attrs.get("kind") == "op" and attrs.get("group") == ["l"]]
    result = next(op for op in members if op in view)
    H = inside(G, result, members, {next(iter(view.successors(l_op))): 1.0})
    lines = [line for caption in step_captions(H) for line in caption.worked]
    assert lines[0].startswith("∂total/∂L = 1")
    assert all(line.startswith("∂total/") for line in lines)


def test_a_groups_inside_keeps_the_whole_graphs_order_so_the_page_is_the_same_every_run():
    # A few nodes of a graph taken as a networkx subgraph come out in a set's order,
    # which changes with the hash seed: the inside would be laid out, and the page
    # written, otherwise from run to run. Its nodes and edges are the graph's, in order.
    from backpropviz.page_groups import inside
    from backpropviz.views import closed_groups

    G = graph_of_script(D2L_FIGURE, quiet=True)
    view = closed_groups(G)
    for group in ("l", "s"):
        members = [op for op, attrs in G.nodes(data=True)
                   if attrs.get("kind") == "op" and attrs.get("group") == [group]]
        H = inside(G, next(op for op in members if op in view), members, {})
        assert list(H) == [node for node in G if node in H] and len(H) > len(members)
        assert list(H.edges(keys=True)) == [edge for edge in G.edges(keys=True)
                                            if edge[0] in H and edge[1] in H]


# Two neurons of Values, each a group, then the output's and the loss's: x[0] and x[1]
# go into both neurons, so their edges carry a contribution's badge each.
NEURONS = """
from backpropviz import Value, group

x = [Value(1.0), Value(-2.0)]
W = [[Value(0.5, requires_grad=True), Value(-0.3, requires_grad=True)],
     [Value(0.8, requires_grad=True), Value(0.2, requires_grad=True)]]
hs = []
for i, row in enumerate(W):
    with group(f"n{i}"):
        hs.append((row[0] * x[0] + row[1] * x[1]).tanh())
v = [Value(1.1, requires_grad=True), Value(-0.7, requires_grad=True)]
with group("out"):
    y = hs[0] * v[0] + hs[1] * v[1]
with group("loss"):
    L = (y - Value(1.0)) * (y - Value(1.0))
L.backward()
"""

# Each badge shown, and how far (in the graph's units) the piece of its edge into it
# ends from its box and the piece out of it starts from it.
BADGE_PIECES = """() => {
  const graph = document.querySelector('#stage svg > g');
  const back = graph.getCTM().inverse();
  const shown = (e) => getComputedStyle(e).display !== 'none';
  const box = (e) => { const b = e.getBBox(), m = back.multiply(e.getCTM());
    return [b.x * m.a + m.e, b.y * m.d + m.f, b.width * m.a, b.height * m.d]; };
  const at = (path, length) => { const p = path.getPointAtLength(length),
    m = back.multiply(path.getCTM()); return [p.x * m.a + m.e, p.y * m.d + m.f]; };
  const off = ([x, y], [bx, by, w, h]) => Math.hypot(Math.max(bx - x, 0, x - bx - w),
                                                     Math.max(by - y, 0, y - by - h));
  const badges = [...graph.querySelectorAll(':scope > g.node.badge')];
  return {shown: badges.filter(shown).map(b => b.id), gaps: badges.filter(shown).flatMap(b => {
    const gaps = [];
    for (const [end, first] of [['/in', false], ['/out', true]]) {
      const piece = document.getElementById(b.id + end);
      if (!piece || !shown(piece)) continue;
      const path = piece.querySelector('path');
      gaps.push([b.id + end, off(at(path, first ? 0 : path.getTotalLength()), box(b))]);
    }
    return gaps; })};
}"""


def test_opened_groups_move_a_contributions_badge_with_its_edge(browser, tmp_path):
    """With the groups beside a closed neuron open, the pieces of x's edges into it run
    into their badges and on out of them (they were moved by the neuron's shift, not the
    badge's, and arced off the drawing's top); the badges on edges into an open group
    are hidden with the edges, the group's link standing in for them (they stayed, as
    short stubs of line)."""
    from test_cli import script

    page, _, errors = _page(browser, tmp_path, script(tmp_path, "neurons.py", NEURONS),
                            "neurons")
    closed = page.evaluate(BADGE_PIECES)
    assert len(closed["shown"]) == 4 and closed["gaps"]
    for name in ("n1", "out", "loss"):
        _click(page, _group_op(page, name))
    assert page.evaluate(STATE)["frames"] == 3
    opened = page.evaluate(BADGE_PIECES)
    n0 = _group_op(page, "n0")
    assert sorted(opened["shown"]) == sorted(b for b in closed["shown"] if f"->{n0}#" in b)
    assert len(opened["gaps"]) == 4 and all(gap < 2 for _, gap in opened["gaps"]), opened
    assert errors == []


LSTM = """\
import os
import torch
from torch import nn

torch.manual_seed(0)
steps = int(os.environ["STEPS"])
lstm, head = nn.LSTM(input_size=3, hidden_size=4, batch_first=True), nn.Linear(4, 1)
out, _ = lstm(torch.randn(2, steps, 3))
loss = ((head(out[:, -1]) - torch.randn(2, 1)) ** 2).mean()
loss.backward()
"""


@pytest.mark.parametrize(("steps", "opens"), [(2, True), (30, False)])
def test_a_module_too_big_to_open_in_place_is_left_closed_and_said(tmp_path, steps, opens):
    """A lecturer's nn.LSTM, drawn with --modules: over two steps its inside opens in
    place; over 30 (some 970 values and ops) it is left closed, in a note, and the page
    is made (over 80, it had failed: dot could not lay the inside out in a minute)."""
    import json
    import re

    from in_process import run_cli

    from backpropviz.page_groups import MAX_OPENED

    pytest.importorskip("torch")
    script = tmp_path / "lstm.py"
    script.write_text(LSTM)
    out = tmp_path / "lstm.html"
    done = run_cli("render", script, "--modules", "-o", out,
                   env={**os.environ, "STEPS": str(steps)}, text=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(re.search(r'id="bpv-data">(.*?)</script>', out.read_text(), re.S)[1])
    names = [group["name"] for group in data["groups"].values()]
    said = re.search(r"note: the page leaves lstm closed: its inside has ([\d,]+) values and "
                     rf"ops, more than the {MAX_OPENED} a group may have to open in place",
                     done.stderr)
    if opens:
        assert names == ["lstm"] and said is None
    else:
        assert names == [] and int(said[1].replace(",", "")) > MAX_OPENED
        # the module is still drawn, its operator and the numbers autograd gave
        assert data["ops"] and any("lstm" in str(op) for op in data["ops"].values())
