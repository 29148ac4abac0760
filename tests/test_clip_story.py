"""The clip's story: numbers moving along the edges, caption terms as they are computed, pacing.

Every scene here is played as manim's dry run (no frame drawn); what moves and
what is on screen is read from the scene's own mobjects after each animation,
and compared with the numbers the IR recorded.
"""

from __future__ import annotations

import itertools
import tempfile

import pytest

pytest.importorskip("manim")

import manim

from backpropviz import Value
from backpropviz.animate import pacing
from backpropviz.animate.fades import Becomes
from backpropviz.animate.mobjects import Z_FLYING
from backpropviz.animate.motion import Along
from backpropviz.animate.story import PHASES, StepCaption, line_terms, sum_terms
from backpropviz.animate.sweep import BackpropScene
from backpropviz.captions import step_captions
from backpropviz.formatting import MAX_ITEMS, format_array
from backpropviz.ir import to_networkx
from backpropviz.names import subscripted
from backpropviz.steps import backward_steps
from backpropviz.style import THEMES

LIGHT = THEMES["light"]


# Every scene writes under one directory, removed when the test process ends.
_MEDIA = tempfile.TemporaryDirectory(prefix="bpv-test-")


def cells(x) -> list[list[str]]:
    """A number as a box draws it (the minus sign typeset)."""
    return [[cell.replace("-", "−") for cell in row] for row in format_array(x, 4, MAX_ITEMS)]


def table_cells(table) -> list[list[str]]:
    """The texts of a Table's entries, row by row (a row has a cell per column)."""
    texts = [getattr(entry, "text", "") for entry in table.entries]
    width = len(table.widths)
    return [texts[i:i + width] for i in range(0, len(texts), width)]


def visible_text(mobject) -> str:
    """The characters of every Text in ``mobject`` whose glyphs are shown (manim's Text
    keeps its string without spaces, a glyph per character)."""
    shown = []
    for part in mobject.get_family():
        if isinstance(part, manim.Text):
            shown.extend(char for char, glyph in zip(part.text, part.submobjects, strict=False)
                         if glyph.get_fill_opacity() > 0.01)
    return "".join(shown)


class Recorded(BackpropScene):
    """A scene that notes, after every animation: what moved along a path (the token's
    numbers), what became what (a transform's target), the caption's shown terms,
    and all text visible on screen."""

    def play(self, *animations, **kwargs):
        moved = []
        for animation in _flat(animations):
            if isinstance(animation, Along):
                moved.append(("travel", table_cells(animation.mobject)))
            elif isinstance(animation, Becomes) and hasattr(animation.target, "entries"):
                moved.append(("becomes", table_cells(animation.target)))
        super().play(*animations, **kwargs)
        lines, words = [], []
        if isinstance(self.caption, StepCaption):
            lines = [[i for i, (_, glyphs) in enumerate(terms)
                      if all(g.get_fill_opacity() > 0.99 for g in glyphs)]
                     for terms in self.caption.line_terms]
            words = [" ".join(terms[i][0].text for i in shown)
                     for terms, shown in zip(self.caption.line_terms, lines, strict=True)]
        # Everything on screen: the texts drawn (numbers, names, notes), then the
        # caption's lines as far as they are shown.
        screen = "".join(visible_text(m) for m in self.mobjects) + " | " + " | ".join(words)
        self.__dict__.setdefault("record", []).append(
            {"time": self.time, "moved": moved, "lines": lines, "caption": self.caption,
             "screen": screen, "step": self.__dict__.get("step_now")})

    def play_step(self, step):
        self.step_now = step.index
        super().play_step(step)
        self.step_now = None


def _flat(animations):
    for animation in animations:
        if isinstance(animation, manim.AnimationGroup) and not isinstance(animation, Becomes):
            # (a Succession is one too)
            yield from _flat(animation.animations)
        else:
            yield animation


def dry_played(scene_class, G, **options):
    """The scene ``scene_class(G, **options)`` played through at 480p, nothing drawn,
    each animation skipped to its end (as test_animate's dry_run)."""
    from test_animate import skipped

    settings = {"media_dir": tempfile.mkdtemp(dir=_MEDIA.name), "disable_caching": True,
                "progress_bar": "none", "verbosity": "WARNING", "quality": "low_quality",
                "dry_run": True}
    with manim.tempconfig(settings):
        scene = scene_class(G, **options)
        scene.camera.capture_mobjects = lambda mobjects, **kwargs: None
        skipped(scene)
        scene.render()
    return scene


def story(G, **options) -> Recorded:
    return dry_played(Recorded, G, **options)


@pytest.fixture(scope="module")
def add_mul_told(example):
    G = example("add_mul", "e")
    return G, story(G)


@pytest.fixture(scope="module")
def fork_told(example):
    G = example("fork", "c")
    return G, story(G)


@pytest.fixture(scope="module")
def mlp_told(example):
    G = example("d2l_mlp")
    return G, story(G)


def chain_of_products():
    """y = ((p·u)·v)·w: three steps of the same rule, each sending to two operands."""
    p, u, v, w = (Value(x, label=name) for x, name in ((1.5, "p"), (2.0, "u"), (3.0, "v"),
                                                       (0.5, "w")))
    q = p * u
    q.label = "q"
    r = q * v
    r.label = "r"
    y = r * w
    y.label = "y"
    y.backward()
    return to_networkx(y)


# ---------------------------------------------------------------- the terms


def test_a_line_splits_into_the_terms_of_its_motion_in_order():
    terms = line_terms("∂e/∂d = c · ∂e/∂e = (−3) · 1 = −3", ["∂e/∂e", "1", "(1)"],
                       g_first=False, result="−3")
    assert " ".join(t.text for t in terms) == "∂e/∂d = c · ∂e/∂e = (−3) · 1 = −3"
    assert [(t.text, t.role) for t in terms if t.role in ("upstream", "local")] == \
        [("c", "local"), ("∂e/∂e", "upstream"), ("(−3)", "local"), ("1", "upstream")]
    assert [t.phase for t in terms] == ["travel"] * 5 + ["meet"] * 4 + ["land"] * 2
    # A fork's sum: the share beside the gradient so far, then their sum.
    total = sum_terms("∂c/∂b = 6 + 6 = 12")
    assert [(t.text, t.phase) for t in total][-2:] == [("=", "total"), ("12", "total")]
    assert all(t.phase == "share" for t in total[:-2])


# ---------------------------------------------------------------- numbers moving


@pytest.mark.parametrize("told", ["add_mul_told", "mlp_told", "fork_told"])
def test_each_share_carries_the_recorded_upstream_and_lands_as_the_recorded_product(
        told, request):
    G, scene = request.getfixturevalue(told)
    records = scene.record
    for step in backward_steps(G):
        moved = [what for record in records if record["step"] == step.index
                 for what in record["moved"]]
        sending = [e for e in step.edges if G.edges[e]["grad"] is not None
                   and G.nodes[e[0]]["role"] != "const"]
        travels = [numbers for kind, numbers in moved if kind == "travel"]
        # One number travels per share: the result's gradient as the IR held it.
        assert travels == [cells(step.grads[step.result])] * len(sending), step.index
        becomes = [numbers for kind, numbers in moved if kind == "becomes"]
        for edge in sending:
            # The product is the share the IR recorded on the edge, and the slot then
            # shows the running sum recorded after it.
            assert cells(G.edges[edge]["grad"]) in becomes, (step.index, edge)
            assert cells(G.edges[edge]["running"]) in becomes, (step.index, edge)
    for value, label in scene.grad_labels.items():
        assert table_cells(label) == cells(G.nodes[value]["grad"])


def test_the_captions_terms_appear_in_the_order_of_the_motion(add_mul_told, fork_told):
    order = {phase: i for i, phase in enumerate(PHASES)}
    for G, scene in (add_mul_told, fork_told):
        captions = step_captions(G)
        for step in backward_steps(G):
            caption = [r for r in scene.record if r["step"] == step.index][-1]["caption"]
            records = [r for r in scene.record if r["caption"] is caption]
            for number, terms in enumerate(caption.line_terms):
                # Terms are only ever added; those of a line appear travel first, then
                # meet, then land (then a fork's share and sum).
                phases, shown = [], set()
                for record in records:
                    now = set(record["lines"][number])
                    assert shown <= now
                    phases.extend(order[terms[i][0].phase] for i in sorted(now - shown))
                    shown = now
                assert phases == sorted(phases) and len(shown) == len(terms)
            # Every worked line ends on screen word for word, and nothing was on screen
            # when the step's caption came in but its rule.
            assert [" ".join(t.text for t, _ in terms) for terms in caption.line_terms] == \
                list(captions[step.index].worked)
            assert not any(records[0]["lines"])


def test_each_term_is_coloured_like_the_slot_its_number_comes_from(add_mul_told):
    _, scene = add_mul_told
    colours = {"upstream": LIGHT.grad, "gradient": LIGHT.grad, "local": LIGHT.saved,
               "operator": LIGHT.muted}
    last = [r for r in scene.record if r["step"] is not None][-1]["caption"]  # (add's step)
    terms = [(term, glyphs) for terms in last.line_terms for term, glyphs in terms]
    assert {term.role for term, _ in terms} >= {"upstream", "gradient", "operator"}
    for term, glyphs in terms:
        assert all(g.get_fill_color().to_hex().lower() == colours[term.role] for g in glyphs)
    # The multiply step's factor, c = −3, is a forward value: coloured as what backward keeps.
    multiply = [r for r in scene.record if r["step"] == 1][-1]["caption"]
    assert ("(−3)", "local") in {(t.text, t.role) for terms in multiply.line_terms
                                 for t, _ in terms}


def test_the_forks_sum_is_not_on_screen_before_its_second_share(fork_told):
    G, scene = fork_told
    b = scene.node_named("b")
    shares = [t for what, edge, t in scene.timeline if what == "share" and edge[0] == b]
    (second,) = shares
    before = [r for r in scene.record if r["time"] < second - 1e-9 and r["step"] == 1]
    after = [r for r in scene.record if r["time"] >= second - 1e-9 and r["step"] == 1]
    # b = a + a = 6 is used twice by c = b·b: each share is 6, the sum 12.
    assert G.nodes[b]["grad"] == 12
    assert before and all("12" not in r["screen"] for r in before)
    # When the second share has arrived, "6 + 6" is on screen, and then its sum.
    assert "∂c/∂b = 6 + 6 |" in after[0]["screen"] + " |" and "12" not in after[0]["screen"]
    assert any("∂c/∂b = 6 + 6 = 12" in r["screen"] for r in after)
    shown = [table_cells(scene.grad_labels[b])]
    assert shown == [cells(12.0)]


def one_dead_unit():
    """L = ReLU(w·x) + ReLU(v·x) with w·x = −1 < 0: the first unit is dead (a gradient
    of 1 reaches its gate and stops there), the second passes its gradient on."""
    x = Value(1.0, label="x")
    w, v = Value(-1.0, label="w", requires_grad=True), Value(2.0, label="v", requires_grad=True)
    dead, live = (w * x).relu(), (v * x).relu()
    dead.label, live.label = "h", "g"
    L = dead + live
    L.label = "L"
    L.backward()
    return to_networkx(L)


def test_a_forks_sum_stands_clear_of_the_value_a_negative_share_in_parentheses():
    """At a fork the gradient so far, a plus and the share go side by side (as the
    caption writes them: −3 + (−5), not −3 + −5), from beside the value rightwards: the
    row had been centred on the gradient's half and run over the value."""
    x = Value(0.3775, label="x")
    a = x * -3.0
    a.label = "a"
    b = x * -5.0
    b.label = "b"
    L = a + b
    L.label = "L"
    L.backward()
    seen = []

    class Measured(BackpropScene):
        def play(self, *animations, **kwargs):
            signs = [animation.mobject for animation in _flat(animations)
                     if getattr(animation.mobject, "text", None) in ("+", "(", ")")]
            if signs:
                value = self.data_labels[next(node for node in self.graph
                                              if self.graph.nodes[node].get("label") == "x")]
                seen.append(("".join(sign.text for sign in signs),
                             min(sign.get_left()[0] for sign in signs), value.get_right()[0]))
            super().play(*animations, **kwargs)

    dry_played(Measured, to_networkx(L))
    ((written, left, value_right),) = seen
    assert written == "+()"
    assert left > value_right


def test_at_a_dead_relu_the_gradient_stops_at_the_gate():
    # (the scalar MLP's dead unit, alone with a live one: its story is the same)
    G = one_dead_unit()
    scene = story(G)
    dead_ops = [op for op, dead in G.nodes(data="dead") if dead is True]
    assert dead_ops
    for op in dead_ops:
        step = next(s for s in backward_steps(G) if s.op == op)
        records = [r for r in scene.record if r["step"] == step.index]
        # Nothing becomes a product past the gate: the zero appears in the slot.
        assert not any(kind == "becomes" for r in records for kind, _ in r["moved"])
        assert "nogradient" in records[-1]["screen"]
        (u, _, _), = step.edges
        assert table_cells(scene.grad_labels[u]) == cells(0.0)


# ---------------------------------------------------------------- pacing


def test_the_pace_of_each_step_follows_what_it_means(example):
    G = example("d2l_mlp")
    seen: set = set()
    steps = backward_steps(G)
    kinds = [pacing.pace_of(G, step, seen, last=step is steps[-1]).kind for step in steps]
    symbols = [G.nodes[step.op]["symbol"] for step in steps]
    # ÷ 2, Σ and o − y pass the gradient on (scaled by a constant); the power and the
    # first matmul are new; the dead ReLU and the last step, the parameters', are held.
    assert list(zip(symbols, kinds, strict=True)) == [
        ("÷", "brief"), ("Σ", "brief"), ("(·)²", "new"), ("−", "brief"), ("@", "new"),
        ("ReLU", "held"), ("@", "held")]


def test_a_rule_seen_before_goes_quicker_and_is_not_repeated():
    G = chain_of_products()
    scene = story(G)
    steps = backward_steps(G)
    starts = [t for what, _, t in scene.timeline if what == "step"]
    landed = [max(t for what, u, t in scene.timeline if what == "gradient"
                  and t >= start and u in {e[0] for e in step.edges})
              for step, start in zip(steps, starts, strict=True)]
    motion = [end - start for start, end in zip(starts, landed, strict=True)]
    kinds = [scene.paces[step.index].kind for step in steps]
    # (p, u, v and w are inputs, not parameters: the last step does not close on
    # parameter gradients, so it is not held)
    assert kinds == ["new", "again", "again"]
    assert motion[1] < 0.8 * motion[0] and motion[2] < 0.8 * motion[0]
    # The rule is written the first time only.
    cues = [text for _, text in scene.cues[_seed(scene) + 1:-1]]  # (then the recap)
    rule = step_captions(G)[1].rule
    assert cues[0].startswith(rule) and rule not in cues[1] and rule not in cues[2]


def _seed(scene) -> int:
    """The index of the seed's cue, the backward pass's first (after the title card's, the
    forward pass's header and a line an op of it)."""
    return next(i for i, (_, text) in enumerate(scene.cues) if text.startswith("backward"))


def test_held_beats_stay_longer_than_their_reading_and_brief_ones_are_short(mlp_told):
    _, scene = mlp_told
    cues = [*scene.cues, (scene.time, "")]
    spans = {text: end - start for (start, text), (end, _) in itertools.pairwise(cues)}
    paces = scene.paces
    for index, pace in paces.items():
        _, text = scene.cues[index + _seed(scene)]
        if pace.held:
            assert spans[text] >= pacing.reading_time(text) + pacing.HELD_EXTRA - 1e-6
    # The ÷ 2 step (9.3 s before pacing by meaning) is brief; the dead ReLU is held.
    divide = scene.cues[_seed(scene) + 1][1]
    assert divide.startswith("∂L/∂(Σ(o − y)²) = ")
    assert spans[divide] < 3.0
    relu = next(text for text in spans if text.startswith("ReLU"))
    assert spans[relu] > spans[divide] * 3


def test_speed_scales_everything(example):
    G = example("add_mul", "e")
    normal, fast = story(G), story(G, speed=2.0)
    # (each wait is rounded up to whole frames: 1/15 s at low quality)
    assert fast.time == pytest.approx(normal.time / 2, abs=len(normal.cues) / 15)


# ---------------------------------------------------------------- subtitles


def test_every_cue_lasts_as_long_as_its_words_take_to_read(mlp_told):
    _, scene = mlp_told
    subtitles = scene.renderer.file_writer.subcaptions
    assert [s.content for s in subtitles] == [text for _, text in scene.cues]
    for subtitle, (start, text) in zip(subtitles, scene.cues, strict=True):
        seconds = (subtitle.end - subtitle.start).total_seconds()
        assert subtitle.start.total_seconds() == pytest.approx(start, abs=1e-3)
        assert seconds >= pacing.reading_time(text) - 1e-3 >= pacing.HOLD_FLOOR - 1e-3, text


# ---------------------------------------------------------------- pages


def test_caption_pages_keep_each_share_whole_and_fit_the_band():
    from backpropviz.animate.story import caption_pages

    a, b, c = ("a", "s", 0), ("b", "s", 0), ("c", "s", 0)
    lines = [(a, 2), ((a, "total"), 2), (b, 1), (c, 3), ((c, "total"), 4)]
    # Under a rule of one row, in 6: a's two lines and b's (5 rows), then c's, whose
    # 7 rows are taller than the band, a line a page.
    assert caption_pages(1, lines, 6) == [[0, 1, 2], [3], [4]]
    assert caption_pages(1, lines, 8) == [[0, 1, 2], [3, 4]]
    assert caption_pages(1, lines, None) == [[0, 1, 2, 3, 4]]
    assert caption_pages(0, [(a, 2), (b, 2), (c, 2)], 4) == [[0, 1], [2]]


WIDE_STACK = """
import torch
readings = [torch.tensor([0.5 * k, -0.25 * k], requires_grad=True) for k in range(1, 10)]
r1, r2, r3, r4, r5, r6, r7, r8, r9 = readings
stacked = torch.stack([r1, r2, r3, r4, r5, r6, r7, r8, r9])
loss = (stacked * stacked).sum()
loss.backward()
"""


def wide_stack(tmp_path):
    """Nine readings stacked: one step whose caption has nine lines, a share each."""
    from backpropviz.script import graph_of_script

    script = tmp_path / "stack_nine.py"
    script.write_text(WIDE_STACK)
    return graph_of_script(script, quiet=True)


def test_a_caption_taller_than_the_band_is_shown_a_page_at_a_time(tmp_path):
    from backpropviz.animate.screen import PAGE_ROWS

    G = wide_stack(tmp_path)
    scene = story(G)
    assert scene.caption_rows <= PAGE_ROWS
    paged = [r for r in scene.record if isinstance(r["caption"], StepCaption)
             and len(r["caption"].pages) > 1]
    assert paged, "the sum's caption has more lines than the band has rows"
    caption = paged[0]["caption"]
    records = [r for r in scene.record if r["caption"] is caption]
    page_of = {line: number for number, page in enumerate(caption.pages) for line in page}
    shown_on: dict[int, list[float]] = {}
    for record in records:
        # The terms on screen belong to one page, never to two at once.
        on = {page_of[line] for line, shown in enumerate(record["lines"]) if shown}
        assert len(on) <= 1, on
        for page in on:
            shown_on.setdefault(page, []).append(record["time"])
    # Every line was written out in full, the pages in turn ...
    assert sorted(shown_on) == list(range(len(caption.pages)))
    full = [i for i, terms in enumerate(caption.line_terms)
            if any(len(r["lines"][i]) == len(terms) for r in records)]
    assert full == list(range(len(caption.line_terms)))
    # ... each with a subtitle of its own, its words as on screen, that lasts until it
    # could be read.
    pages = []
    for page in range(len(caption.pages)):
        caption.page = page
        pages.append(caption.page_text())
    cues = [*scene.cues, (scene.time, "")]
    held = {text: after - start for (start, text), (after, _) in itertools.pairwise(cues)}
    assert all(text in held for text in pages)
    assert caption.rule_text in pages[0] and caption.rule_text not in pages[1]
    for text in pages:
        assert held[text] >= pacing.reading_time(text) - 1e-3, text


@pytest.mark.parametrize("script", ["lstm_cell", "attention_split", "resnet_small"])
def test_every_caption_row_fits_the_frame_and_reads_as_the_caption(script):
    """Tensors' captions run to three frames' width on one line: cut before "=", then
    before other operators, a matrix between its rows; only a row of one term (a long
    name) is set smaller, never cut at the frame's edge."""
    from pathlib import Path

    from backpropviz.animate.mobjects import TextStore
    from backpropviz.animate.screen import CAPTION_WIDTH
    from backpropviz.animate.story import step_caption
    from backpropviz.script import graph_of_script
    from backpropviz.views import drawn_graph

    path = Path(__file__).parent / "torch_scripts" / f"{script}.py"
    G = drawn_graph(graph_of_script(path, quiet=True))
    captions, store = step_captions(G), TextStore()
    cut_matrices = 0
    for step in backward_steps(G):
        caption = step_caption(G, step, captions[step.index], captions[step.index].rule,
                               store, LIGHT, 4)
        assert caption.line_texts == [subscripted(line) for line in captions[step.index].worked]
        assert all(row.width <= CAPTION_WIDTH + 1e-6 for row in caption.rows)
        # A matrix's pieces: its rows, each ending in ";" (a row's entries in ",").
        cut_matrices += sum(term.text.endswith((";", ",")) for terms in caption.line_terms
                            for term, _ in terms)
    assert cut_matrices > 0 or script == "resnet_small"


def test_the_caption_and_title_lie_on_a_plate_that_hides_the_edges_behind(add_mul_told,
                                                                            example):
    """The camera is as high as the columns it shows; a long edge from far away may run
    past the graph's room, and passes under the words, never through them."""
    _, scene = add_mul_told
    captions = [r["caption"] for r in scene.record if isinstance(r["caption"], StepCaption)]
    assert captions
    for caption in {id(c): c for c in captions}.values():
        plate = caption.submobjects[0]
        assert isinstance(plate, manim.BackgroundRectangle)
        assert plate.get_fill_color().to_hex().lower() == LIGHT.background.lower()
        assert plate.get_fill_opacity() == 1
        words = manim.VGroup(*caption.rows)
        assert plate.width >= words.width and plate.height >= words.height
        # Over the numbers written on the graph (a contribution on its edge) too.
        assert min(part.z_index for part in caption.get_family()) > Z_FLYING
    # On a transparent theme the slide's own colour shows: no plate.
    clear = story(example("add_mul", "e"), theme="transparent", phase="backward")
    shown = [r["caption"] for r in clear.record if isinstance(r["caption"], StepCaption)]
    assert shown and not any(isinstance(c.submobjects[0], manim.BackgroundRectangle)
                             for c in shown)


def test_a_modules_parameters_gradients_appear_in_it_and_in_its_caption_at_its_step():
    """A module's operator that holds its parameters (a view of modules) draws them in the
    clip as in the figure, their gradients' norms shown from the module's step on; the
    step's caption ends with their lines, all shown by its end, as is the first layer's
    whose input has no gradient, where the parameters' lines are all it says."""
    torch = pytest.importorskip("torch")
    from pathlib import Path

    from backpropviz.formatting import held_rows
    from backpropviz.script import graph_of_script
    from backpropviz.views import drawn_graph

    script = Path(__file__).resolve().parent / "torch_scripts" / "wide_sequential.py"
    G = drawn_graph(graph_of_script(script, quiet=True), modules=True)
    scene = story(G, phase="backward")
    captions = step_captions(G)
    namespace = __import__("runpy").run_path(str(script))
    norms = {f"model.{name}": f"{float(torch.linalg.vector_norm(p.grad.double())):.4g}"
             for name, p in namespace["model"].named_parameters()}
    holding = 0
    for step in backward_steps(G):
        attrs = G.nodes[step.op]
        records = [r for r in scene.record if r["step"] == step.index]
        caption = records[-1]["caption"]
        # every worked line on screen, word for word, whole at some time in the step (a
        # caption taller than the band, a page at a time)
        assert [" ".join(t.text for t, _ in terms) for terms in caption.line_terms] == \
            list(captions[step.index].worked)
        assert all(any(len(record["lines"][i]) == len(terms) for record in records
                       if record["caption"] is caption)
                   for i, terms in enumerate(caption.line_terms))
        if not attrs.get("parameters"):
            continue
        holding += 1
        op = scene.diagram.ops[step.op]
        rows = held_rows(attrs)
        # (its class, then a row for each: manim's Text keeps no spaces)
        assert [line[0].text for line in op.submobjects[-1][1:]] == \
            [words.replace(" ", "") for words, _ in rows]
        said = [line for line in captions[step.index].worked if "‖∂loss/∂" in line]
        assert said == [f"‖∂loss/∂{attrs['symbol']}.{name}‖ = "
                        f"{norms[attrs['symbol'] + '.' + name]}"
                        for name in attrs["parameter_names"]]
        before = [r for r in scene.record if r["step"] is not None and r["step"] < step.index]
        drawn = [number.replace(" ", "") for _, number in rows]
        assert not any(number in before[-1]["screen"].split(" | ")[0] for number in drawn)
        assert all(number in records[-1]["screen"].split(" | ")[0] for number in drawn)
    assert holding == 2


def test_a_paged_captions_last_lines_come_on_their_own_page_and_in_its_cue():
    """A small CNN at module level: the classifier's step says a wide gradient and its
    parameters' norms, more rows than the band holds. The norms' lines come on a page
    of their own, after the page before is read and cleared, never drawn over it, and
    the subtitles carry them."""
    pytest.importorskip("torch")
    from pathlib import Path

    from backpropviz.script import graph_of_script
    from backpropviz.views import drawn_graph

    script = Path(__file__).resolve().parent / "torch_scripts" / "small_cnn.py"
    G = drawn_graph(graph_of_script(script, quiet=True), modules=True)
    scene = story(G, phase="backward")
    paged = [r for r in scene.record if isinstance(r["caption"], StepCaption)
             and len(r["caption"].pages) > 1 and ("after", 0) in r["caption"].terms]
    assert paged  # (the classifier's step)
    caption = paged[-1]["caption"]
    after = [i for i, line in enumerate(caption.line_texts) if line.startswith("‖∂loss/∂")]
    assert after and {caption.page_of[("after", n)] for n in range(len(after))} == {
        len(caption.pages) - 1}
    page_of_line = {i: n for n, page in enumerate(caption.pages) for i in page}
    for record in (r for r in scene.record if r["caption"] is caption):
        # (the lines on screen at once are one page's)
        shown = {page_of_line[i] for i, terms in enumerate(record["lines"]) if terms}
        assert len(shown) <= 1, record["time"]
    cues = "\n".join(text for _, text in scene.cues)
    assert all(caption.line_texts[i] in cues for i in after)
