"""The manim clip: its structure without encoding, real low-quality renders, and its errors."""

from __future__ import annotations

import importlib.util
import itertools
import re
import runpy
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("manim")
av = pytest.importorskip("av")

import manim  # noqa: E402

from backpropviz import Value  # noqa: E402
from backpropviz.animate import AnimateError, check_video, render_video  # noqa: E402
from backpropviz.animate.sweep import BackpropScene  # noqa: E402
from backpropviz.ir import to_networkx  # noqa: E402
from backpropviz.layout import layout  # noqa: E402
from backpropviz.style import THEMES  # noqa: E402
from tests.in_process import run_cli  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


# Every scene writes under one directory, removed when the test process ends.
_MEDIA = tempfile.TemporaryDirectory(prefix="bpv-test-")


def quiet_config(**overrides: object) -> dict:
    settings = {"media_dir": tempfile.mkdtemp(dir=_MEDIA.name), "disable_caching": True,
                "progress_bar": "none", "verbosity": "WARNING", "quality": "low_quality"}
    settings.update(overrides)
    return settings


def dry_run(G=None, scene_class: type[BackpropScene] = BackpropScene,
            **options) -> BackpropScene:
    """The whole story played without drawing a frame: manim's dry run, which writes
    no file, with the camera's drawing turned off as well (manim 0.22 still
    rasterizes every frame of a dry run: half its time, and no test here looks at
    those pixels; the scene's state, its times and cues are the same without)."""
    with manim.tempconfig(quiet_config(dry_run=True)):
        scene = scene_class(G, **options)
        scene.camera.capture_mobjects = lambda mobjects, **kwargs: None
        skipped(scene)
        scene.render()
    return scene


def skipped(scene) -> None:
    """Each animation of ``scene`` played to its end in one step, as the conductor of a
    clip rendered in several processes skips it (animate/parallel.py), not frame by
    frame: the same state after each one, to the bit, and the same clock
    (tests/test_parallel_clip.py checks that on whole clips), in a fraction of the time."""
    from backpropviz.animate.parallel import _skipped

    renderer = scene.renderer
    manims_play = renderer.play

    def play(*args, **kwargs) -> None:
        with _skipped(renderer, scene):
            manims_play(*args, **kwargs)

    renderer.play = play


class _Watched(BackpropScene):
    """A scene that keeps, after each backward step, the texts in its caption region."""

    def play_step(self, step):
        super().play_step(step)
        self.__dict__.setdefault("shown", []).append(visible_lines(self.caption))
        self.__dict__.setdefault("notes", []).extend(
            mark for mark in self.marks
            if isinstance(mark, manim.Text) and mark.text.startswith("deadunit"))


def visible_lines(caption) -> list[str]:
    """A step's caption as on screen, a line each, without spaces (as manim's Text
    keeps its string): the rule, then of each worked line the terms not hidden."""
    lines = ["".join(row.text for row in caption.rule)] if caption.rule is not None else []
    for terms in caption.line_terms:
        lines.append("".join(term.text.replace(" ", "") for term, glyphs in terms
                             if all(g.get_fill_opacity() > 0.99 for g in glyphs)))
    return lines


@pytest.fixture(scope="module")
def add_mul(example):
    return example("add_mul", "e")


@pytest.fixture(scope="module")
def fork(example):
    return example("fork", "c")


@pytest.fixture(scope="module")
def d2l_mlp(example):
    return example("d2l_mlp")


# One dry run of each clip for the tests that read the same story (none changes it);
# watched (_Watched, above: it only records what each step showed) for those that
# read the captions and notes shown too.
@pytest.fixture(scope="module")
def add_mul_story(add_mul):
    return dry_run(add_mul, _Watched)


@pytest.fixture(scope="module")
def fork_story(fork):
    return dry_run(fork)


@pytest.fixture(scope="module")
def d2l_mlp_story(d2l_mlp):
    return dry_run(d2l_mlp, _Watched)


# The chain rule of each step, as the book writes it, worked out by hand:
# e = d·c with d = a + b, and c = b·b with b = a + a (each operand twice).
ADD_MUL_CAPTIONS = ["∂e/∂e = 1", "∂e/∂d = c · ∂e/∂e,  ∂e/∂c = d · ∂e/∂e",
                    "∂e/∂a = ∂e/∂d,  ∂e/∂b = ∂e/∂d"]
# The same with the book's numbers (SEED.md: a = 2, b = 1, c = −3, d = 3).
ADD_MUL_WORKED = [["∂e/∂e = 1"],
                  ["∂e/∂d = c · ∂e/∂e = (−3) · 1 = −3", "∂e/∂c = d · ∂e/∂e = 3 · 1 = 3"],
                  ["∂e/∂a = ∂e/∂d = −3", "∂e/∂b = ∂e/∂d = −3"]]
FORK_CAPTIONS = ["∂c/∂c = 1", "∂c/∂b = b · ∂c/∂c,  ∂c/∂b += b · ∂c/∂c",
                 "∂c/∂a = ∂c/∂b,  ∂c/∂a += ∂c/∂b"]


# ---------------------------------------------------------------- structure


def test_one_mobject_per_node_and_edge_where_graphviz_put_them(add_mul):
    with manim.tempconfig(quiet_config()):
        scene = BackpropScene(add_mul)
        scene.setup()
    diagram = scene.diagram
    values = {n for n, kind in add_mul.nodes(data="kind") if kind == "value"}
    assert set(diagram.values) == values
    assert set(diagram.ops) == set(add_mul.nodes) - values
    assert set(diagram.edges) == set(add_mul.edges(keys=True))
    boxes = layout(add_mul, legend=False)
    for node, box in boxes.nodes.items():
        part = diagram.values.get(node) or diagram.ops[node]
        np.testing.assert_allclose(part.get_center()[:2], diagram.point(box.x, box.y)[:2],
                                   atol=1e-6)
    # Each edge is drawn as graphviz's Bezier curve: it starts where graphviz's does.
    for key, path in boxes.edges.items():
        start = diagram.edges[key].path.get_start()
        np.testing.assert_allclose(start[:2], diagram.point(*path.points[0])[:2], atol=1e-6)


def test_steps_follow_backward_order_and_captions_match(fork, fork_story):
    scene = fork_story
    steps = [node for what, node, _ in scene.timeline if what == "step"]
    assert steps == fork.graph["backward_order"]
    assert [caption.text for caption in scene.captions] == FORK_CAPTIONS
    # Every value ends with a gradient label showing the IR's final gradient.
    for value, label in scene.grad_labels.items():
        shown = "".join(t.text for t in label.entries).replace("−", "-")
        assert shown == f"{fork.nodes[value]['grad']:g}"


def test_fork_shows_first_contribution_then_the_sum(fork, fork_story):
    # a is used twice by b = a + a: its slot shows the first edge's share, then,
    # once the second share has arrived beside it, the sum.
    scene = fork_story
    a = next(n for n, label in fork.nodes(data="label") if label == "a")
    shown = [t for what, node, t in scene.timeline if what == "gradient" and node == a]
    second = [t for what, edge, t in scene.timeline if what == "share" and edge[0] == a]
    assert len(shown) == 2 and len(second) == 1 and shown[0] < second[0] < shown[1]
    assert set(scene.edge_labels) == {e for e in fork.edges(keys=True)
                                      if e[0] in (a, scene.node_named("b"))}


def test_a_scenes_example_without_backward_still_gets_the_backward_pass(tmp_path):
    # The script never calls backward(); a Value's grad is 0.0 before it, not
    # None, so only the front end's "has a pass reached it" can tell.
    path = tmp_path / "no_backward.py"
    path.write_text("from backpropviz import Value\na = Value(2.0)\nb = a * a\n")

    class Scene(BackpropScene):
        example = path

    scene = dry_run(scene_class=Scene)
    assert [what for what, _, _ in scene.timeline].count("step") == 1
    a = scene.node_named("a")
    assert scene.graph.nodes[a]["grad"] == 4.0  # d(a²)/da = 2a


def test_forward_phase_alone_needs_no_backward():
    x = Value(2.0)
    y = x * x
    G = to_networkx(y, names={"x": x, "y": y})
    scene = dry_run(G, phase="forward")
    assert scene.timeline == []
    assert scene.captions == []


def test_the_meter_shows_the_bytes_kept_after_each_step(d2l_mlp, d2l_mlp_story):
    # The meter is opt-in (--memory): by default the clip has none.
    assert d2l_mlp_story.meter_shown == [] and d2l_mlp_story.meter is None
    # The book's MLP, counted by hand in test_memory: 48, 64, 96, 96, 104, 104, 120 as
    # the forward pass keeps W1 and x, z, W2 and h, o − y, Σ(o − y)² and 2; the backward
    # pass starts with all 120 and frees them in reverse.
    G = d2l_mlp
    backward_only = dry_run(G, phase="backward", memory=True)
    assert backward_only.meter_shown == [120, 104, 104, 96, 96, 64, 48, 0]
    assert backward_only.meter is None  # the recap ends it


def test_unicode_captions_without_latex(monkeypatch, add_mul):
    monkeypatch.setattr("shutil.which", lambda name: None)
    with manim.tempconfig(quiet_config()):
        scene = BackpropScene(add_mul)
        scene.setup()
    caption = scene.captions[1]
    made = scene.store.math(caption.tex, caption.text, 0.4, "#000000")
    assert isinstance(made, manim.Text)
    assert made.text == caption.text.replace(" ", "")


def test_the_clips_text_is_as_wide_as_the_pictures():
    # EM_PER_FONT_SIZE makes a Text's em the em the SVG's text is measured in:
    # each text's ink spans its advance (metrics.py) less the side bearings.
    from backpropviz.animate.mobjects import TextStore
    from backpropviz.metrics import text_width

    store, em = TextStore(), 0.25
    numbers = ["0.5", "\u22121234", "2.5e+3", "\u22123"]
    names = ["W", "o", "h", "(o \u2212 y)"]  # (W1 is set W₁, its index a subscript)
    for text, face in [*((n, "sans") for n in numbers), *((n, "serif") for n in names)]:
        made = store.text(text, em, "#000000", serif=face == "serif", italic=face == "serif")
        width = text_width(text, em, face)
        assert width - 0.2 * em <= made.width <= width + 0.05 * em, text


def test_importing_the_package_does_not_import_manim():
    code = ("import sys, backpropviz.animate as a; "
            "print('manim' in sys.modules, a.FORMATS)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.startswith("False")


# ---------------------------------------------------------------- renders


def srt_entries(path: Path) -> list[tuple[float, float, str]]:
    """(start, end, text) of each subtitle in an .srt file."""
    def seconds(stamp: str) -> float:
        h, m, rest = stamp.split(":")
        s, ms = rest.split(",")
        return int(h) * 3600 + int(m) * 60 + int(s) + int(ms) / 1000

    entries = []
    for block in path.read_text(encoding="utf-8").strip().split("\n\n"):
        lines = block.splitlines()
        start, end = (seconds(x.strip()) for x in lines[1].split("-->"))
        entries.append((start, end, "\n".join(lines[2:])))
    return entries


def frames_of(path: Path) -> tuple[list, float]:
    """Every decoded frame (time, RGB array) of a video, and its duration."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = [(frame.time, frame.to_ndarray(format="rgb24"))
                  for frame in container.decode(stream)]
        duration = float(stream.duration * stream.time_base) if stream.duration else None
    return frames, duration or frames[-1][0]


def frame_at(frames: list, t: float) -> np.ndarray:
    return min(frames, key=lambda frame: abs(frame[0] - t))[1]


def pixel(point: np.ndarray, image: np.ndarray) -> tuple[int, int]:
    """Pixel (row, column) of a scene point, the camera at rest (manim's frame)."""
    height, width = image.shape[:2]
    column = (point[0] / manim.config.frame_width + 0.5) * width
    row = (0.5 - point[1] / manim.config.frame_height) * height
    return round(row), round(column)


def region(mobject: manim.Mobject, image: np.ndarray) -> np.ndarray:
    """The pixels of ``image`` under ``mobject``'s bounding box (the camera at rest)."""
    top, left = pixel(np.array([mobject.get_left()[0], mobject.get_top()[1], 0]), image)
    bottom, right = pixel(np.array([mobject.get_right()[0], mobject.get_bottom()[1], 0]), image)
    return image[top:bottom + 1, left:right + 1]


def blue_pixels(patch: np.ndarray) -> int:
    """How many pixels of ``patch`` are clearly blue (blue well above red and green)."""
    r, g, b = (patch[..., i].astype(int) for i in range(3))
    return int(np.sum((b - r > 80) & (b - g > 60)))


def nearest_colour(patch: np.ndarray, colour: str) -> float:
    """Distance (RGB) from ``colour`` to the closest pixel of ``patch``."""
    rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)
    return float(np.min(np.linalg.norm(patch.astype(float) - rgb, axis=-1)))


def near(pixels: np.ndarray, colour: str, distance: float = 12) -> int:
    """How many of ``pixels`` (RGB) are within ``distance`` of ``colour``."""
    rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)
    return int(np.sum(np.linalg.norm(pixels.astype(float) - rgb, axis=-1) < distance))


@pytest.fixture(scope="module")
def mp4(add_mul, tmp_path_factory):
    """add_mul's clip at triple speed with its memory meter (--memory), the one the
    tests of an mp4's frames and subtitles read; the README's test renders it at its
    own speed."""
    out = tmp_path_factory.mktemp("mp4") / "sweep.mp4"
    render_video(add_mul, out, quality="l", speed=3.0, memory=True, progress=False)
    return out


@pytest.fixture(scope="module")
def mp4_story(add_mul):
    """The story of ``mp4``, told again without drawing it."""
    return dry_run(add_mul, _Watched, memory=True, speed=3.0)


def test_mp4_duration_size_and_subtitles(mp4, mp4_story):
    frames, duration = frames_of(mp4)
    assert frames[0][1].shape[:2] == (480, 854)  # -ql: 854x480
    scene = mp4_story
    assert duration == pytest.approx(scene.time, abs=0.15)
    entries = srt_entries(mp4.with_suffix(".srt"))
    texts = [text for _, _, text in entries]
    # The title card's cue, the header on screen; then each step's rule and its numbers;
    # then the recap.
    assert texts[0].startswith("e = ") and texts[-1].startswith("Recap")
    assert texts[1] == "Forward pass: compute and store each value"
    # Each op of the forward pass worked in its numbers (a = 2, b = 1, c = −3), then the
    # backward pass's steps.
    assert texts[2:4] == ["d = a + b = 2 + 1 = 3", "e = d·c = 3 · (−3) = −9"]
    assert [text.splitlines()[1:] for text in texts[4:-1]] == ADD_MUL_WORKED
    assert all(start < end <= duration + 0.1 for start, end, _ in entries)
    # Cue for cue, the .srt is the clip's caption text, at the times it was shown.
    assert [(round(start, 1), text) for start, _, text in entries] == \
        [(round(start, 1), text) for start, text in scene.cues]


def test_mp4_frame_shows_the_gradient_in_blue_at_its_node(mp4, mp4_story):
    frames, _ = frames_of(mp4)
    scene = mp4_story
    assert scene.overview == 1  # the graph fits: the camera never moves
    blue = THEMES["light"].grad
    a = scene.node_named("a")
    shown = next(t for what, node, t in scene.timeline if what == "gradient" and node == a)
    started = next(t for what, _, t in scene.timeline if what == "step")
    box = scene.diagram.values[a]
    after = frame_at(frames, shown + 0.2)
    before = frame_at(frames, started + 0.1)
    # During the backward pass a's gradient (-3) appears in blue in its slot,
    # where nothing blue was before; its forward value stays black.
    grad, data = scene.grad_labels[a], box.data_label()
    np.testing.assert_allclose(grad.get_center(), box.grad_slot, atol=1e-9)
    assert nearest_colour(region(grad, after), blue) < 60
    assert blue_pixels(region(grad, after)) >= 5
    assert blue_pixels(region(grad, before)) == 0
    assert nearest_colour(region(data, after), "#000000") < 60
    assert blue_pixels(region(data, after)) == 0


def test_mp4_meter_is_full_when_backward_starts_and_empty_at_the_end(mp4, mp4_story):
    # The meter is opt-in (--memory), on in this clip.
    frames, _ = frames_of(mp4)
    scene = mp4_story
    # e = d·c keeps d and c (16 bytes), all there is; its rule, the first step, frees both.
    assert scene.meter_shown == [0, 16, 16, 0, 0]
    meter = scene.last_meter
    assert meter[0].text.replace(" ", "") == "keptforbackward:0bytes"
    saved = THEMES["light"].saved
    bar = meter[1][0]  # the track; the camera never moves for add_mul
    started = next(t for what, _, t in scene.timeline if what == "step")
    recap = scene.cues[-1][0]
    assert nearest_colour(region(bar, frame_at(frames, started + 0.1)), saved) < 40
    assert near(region(bar, frame_at(frames, recap - 0.2)), saved, 40) == 0


def test_gif_render(add_mul, tmp_path):
    out = render_video(add_mul, tmp_path / "sweep.gif", speed=3.0, progress=False)
    assert out == tmp_path / "sweep.gif"
    frames, duration = frames_of(out)
    assert frames[0][1].shape[:2] == (480, 854)
    assert 5 < duration < 15  # about 33 s of story at triple speed
    assert out.with_suffix(".srt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.gif", "sweep.srt"]
    # The light theme has no yellow: a fixed 3-3-2 palette (manim's own GIF
    # path) fringes every anti-aliased edge with it; our palette must not.
    last = frames[-1][1].astype(int)
    red, green, blue = last[..., 0], last[..., 1], last[..., 2]
    yellow = (red > 180) & (green > 180) & (blue < 120)
    assert yellow.sum() < 200  # manim's GIF of this frame has about 1,800


def last_rgba_frame(path: Path, before: float | None = None) -> np.ndarray:
    """The last frame of a clip (``before`` a time, if given) as RGBA, its alpha plane
    kept."""
    with av.open(str(path)) as movie:
        stream = movie.streams.video[0]
        if path.suffix == ".webm":
            assert stream.metadata.get("alpha_mode") == "1"
            # ffmpeg's own VP9 decoder drops the alpha plane; libvpx keeps it.
            decoder = av.CodecContext.create("libvpx-vp9", "r")
            frames = [frame for packet in movie.demux(stream) for frame in decoder.decode(packet)]
        else:
            frames = list(movie.decode(stream))
    if before is not None:
        frames = [frame for frame in frames if frame.time is None or frame.time < before]
    return frames[-1].to_ndarray(format="rgba")


@pytest.fixture(scope="module")
def add_mul_at_speed_8(add_mul):
    """The backward pass's story at eight times the speed, for its times (a theme changes
    colours only)."""
    return dry_run(add_mul, speed=8.0, phase="backward")


# Each theme once and each format once: a theme sets colours, a format keeps the alpha
# channel, each apart from the other (a WebM still costs twice a .mov's time).
@pytest.mark.parametrize(("theme", "suffix"), [("transparent", ".webm"),
                                               ("transparent-dark", ".mov")])
def test_a_theme_on_no_background_gives_a_clip_with_an_alpha_channel(add_mul, add_mul_at_speed_8,
                                                                     tmp_path, theme, suffix,
                                                                     caplog):
    out = render_video(add_mul, tmp_path / f"clip{suffix}", theme=theme, speed=8.0,
                       phase="backward", progress=False)
    # (manim's warnings that WebM is slow and that quick beats are shorter than a
    # frame, both as meant, are not passed on)
    assert not [record for record in caplog.records if record.name == "manim"]
    # The last frame with the graph on it: the one before the recap.
    recap = add_mul_at_speed_8.cues[-1][0]
    image = last_rgba_frame(out, before=recap)
    alpha = image[..., 3]
    assert (alpha == 0).mean() > 0.5  # the background is see-through
    assert alpha[:8, :8].max() == 0 and alpha[-8:, -8:].max() == 0  # its corners too
    assert (alpha == 255).sum() > 1000  # the boxes and text are not
    # In the theme's own colours: the dark one's light text and blue on its dark boxes.
    palette = THEMES[theme]
    opaque = image[alpha == 255][:, :3]
    for colour in (palette.text, palette.grad, palette.node_fill):
        assert nearest_colour(opaque, colour) < 40, colour
    other = THEMES["transparent" if theme == "transparent-dark" else "transparent-dark"]
    assert near(opaque, palette.node_fill) > 20 * near(opaque, other.node_fill)


def test_cli_renders_a_clip(tmp_path):
    # (the command's parser and writer in this process; tests/test_cli.py runs the
    # entry point itself in a process of its own)
    out = tmp_path / "clip.mp4"
    done = run_cli("render", EXAMPLES / "add_mul.py", "-o", out, "--speed", "3", cwd=tmp_path,
                   text=True)
    assert done.returncode == 0, done.stderr
    assert out.exists() and out.with_suffix(".srt").exists()
    seconds = float(re.search(r"a clip ([\d.]+) s long", done.stderr).group(1))
    assert frames_of(out)[1] == pytest.approx(seconds, abs=0.15)


# ---------------------------------------------------------------- errors


def test_unknown_format_lists_the_formats(add_mul, tmp_path):
    with pytest.raises(AnimateError, match=r"unknown video format: '\.avi'.*'\.mp4'.*'\.webm'"):
        render_video(add_mul, tmp_path / "clip.avi")


@pytest.mark.parametrize("theme", ["transparent", "transparent-dark"])
@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_a_theme_on_no_background_needs_a_format_with_alpha(add_mul, tmp_path, theme, suffix):
    message = (f"--theme {theme} needs a video format with an alpha channel (.webm, .mov), "
               f"not {suffix}")
    with pytest.raises(AnimateError) as refused:
        render_video(add_mul, tmp_path / f"clip{suffix}", theme=theme, progress=False)
    assert str(refused.value) == message
    assert list(tmp_path.iterdir()) == []
    # The command line asks the same before it runs a script, with or without the dot.
    for fmt in (suffix, suffix[1:]):
        with pytest.raises(AnimateError) as asked:
            check_video(theme, fmt)
        assert str(asked.value) == message


def test_check_video_goes_by_the_theme_not_its_name(monkeypatch):
    for theme, fmt in (("transparent", "webm"), ("transparent-dark", ".mov"), ("dark", "mp4"),
                       ("light", "gif")):
        assert check_video(theme, fmt) is None
    # A theme on no background under any name needs the alpha channel.
    monkeypatch.setitem(THEMES, "slide", replace(THEMES["dark"], name="slide",
                                                 background="transparent"))
    with pytest.raises(AnimateError, match=r"^--theme slide needs .* not \.mp4$"):
        check_video("slide", "mp4")
    with pytest.raises(AnimateError, match=r"unknown theme: 'sepia' \(must be one of "):
        check_video("sepia", "mp4")


def test_graph_over_the_limit_suggests_tensors(tmp_path):
    x = Value(1.0)
    for _ in range(40):
        x = x * 1.0
    G = to_networkx(x)
    with pytest.raises(AnimateError, match=r"\d+ nodes, more than the animation limit of 60.*"
                                           r"Tensor"):
        render_video(G, tmp_path / "clip.mp4")
    assert list(tmp_path.iterdir()) == []


def test_manim_missing_says_what_to_install(add_mul, tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "manim" else real(name, *a))
    with pytest.raises(AnimateError, match=r"pip install 'backpropviz\[video\]'"):
        render_video(add_mul, tmp_path / "clip.mp4")


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_no_partial_file_when_rendering_stops(add_mul, tmp_path, monkeypatch, error):
    def stop(scene):
        scene.show_graph()
        raise error

    monkeypatch.setattr(BackpropScene, "construct", stop)
    with pytest.raises(type(error)):
        render_video(add_mul, tmp_path / "clip.mp4", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_dead_marks_land_on_their_entries_when_an_array_is_shortened():
    from backpropviz.animate.mobjects import Table, TextStore
    from backpropviz.formatting import format_array

    # Ten entries are drawn as 0 1 2 3 ⋮ 9: entry 4 is elided, entry 9 is the last row.
    dead = np.zeros(10, dtype=bool)
    dead[[4, 9]] = True
    table = Table(format_array(np.arange(10.0)), TextStore(), 0.3, "#000000", bracketed=True,
                  dead=dead, dead_color="#a3121f", dead_fill="#fde4e6")
    (mark,) = table.dead_marks
    last_row = table.entries[-1]
    assert abs(mark.get_center()[1] - last_row.get_center()[1]) < 1e-6


def test_a_values_numbers_are_centred_in_their_columns_and_a_gradients_right_aligned(
        example):
    """As the figure sets them (number_tables: a value's cells centred, a gradient's
    right-aligned), so that a batch's "2  1  0.5" keeps its air in the clip too."""
    from backpropviz.animate.mobjects import ValueNode

    G = example("d2l_mlp")  # W1 = [1, −1; 0, 1]: a column of "−1" over "1"
    with manim.tempconfig(quiet_config(dry_run=True)):
        scene = BackpropScene(G)
        scene.setup()
    (w1,) = [node for node, attrs in G.nodes(data=True) if attrs.get("label") == "W1"]
    box: ValueNode = scene.diagram.values[w1]
    data, grad = box.data_label(), box.grad_label(G.nodes[w1]["grad"])
    minus_one, one = data.entries[1], data.entries[3]  # (row by row: 1, −1; 0, 1)
    assert (minus_one.text, one.text) == ("−1", "1")
    assert abs(minus_one.get_center()[0] - one.get_center()[0]) < 1e-6
    assert abs(minus_one.get_right()[0] - one.get_right()[0]) > 0.01
    # W1's gradient [0, 0; 2, 4]: its columns right-aligned.
    assert abs(grad.entries[0].get_right()[0] - grad.entries[2].get_right()[0]) < 1e-6


def test_a_backward_step_shows_the_captions_numbers_as_text(add_mul_story):
    scene = add_mul_story
    # manim's Text keeps its string without spaces.
    multiply, add = scene.shown
    assert "∂e/∂d=c·∂e/∂e=(−3)·1=−3" in multiply and "∂e/∂c=d·∂e/∂e=3·1=3" in multiply
    assert "∂e/∂a=∂e/∂d=−3" in add
    # What is on screen is the step's cue, line for line.
    cues = [text for _, text in scene.cues]
    seed = next(i for i, cue in enumerate(cues) if cue.startswith("backward starts"))
    for shown, cue in zip(scene.shown, cues[seed + 1:-1], strict=True):
        assert shown == [line.replace(" ", "") for line in cue.splitlines()]


def test_each_caption_stays_long_enough_to_be_read(d2l_mlp_story):
    from backpropviz.animate.pacing import HOLD_FLOOR, READING_CPS
    scene = d2l_mlp_story
    cues = [*scene.cues, (scene.time, "")]
    for (start, text), (end, _) in itertools.pairwise(cues[2:]):
        # Every word of the cue is on screen: all of it must be read.
        assert end - start >= max(HOLD_FLOOR, len(text) / READING_CPS) - 1e-6, text
    # The forward pass, a line an op, is quicker than the backward story, a rule and its
    # numbers a step.
    seed = next(start for start, text in cues if text.startswith("backward starts"))
    forward = seed - cues[1][0]
    backward = scene.time - seed
    assert forward < backward / 2


def test_the_dead_unit_note_has_a_cue_and_clears_every_box(d2l_mlp_story):
    scene = d2l_mlp_story
    cue = next(text for _, text in scene.cues if "ReLU passes" in text)
    assert cue.endswith("dead unit 1: gradient stops")
    from backpropviz.animate.motion import overlap
    (note,) = scene.notes
    assert not any(overlap(note, box.frame) for box in scene.diagram.values.values())


def test_the_closing_recap_is_readable_at_480p(example):
    # mlp3 has six parameters: in one row their digits would be 8 px tall at 480p.
    # (The backward pass alone: the overview and recap close it all the same.)
    scene = dry_run(example("mlp3"), phase="backward")
    assert scene.overview > 1 and scene.caption is not None  # (the recap's results)
    digits = [entry for line in scene.caption for part in line for entry in part[1].entries
              if entry.text.strip("−.").isdigit()]
    assert len(digits) >= 6
    smallest = min(entry.height for entry in digits) / scene.camera.frame.height * 480
    assert smallest >= 12
    # Its cue gives every parameter's gradient in words.
    start, cue = scene.cues[-1]
    assert cue.count("∂L/∂") == len(scene.results) and start < scene.time


def test_a_constant_gets_no_gradient_in_the_clip_as_in_the_pictures(d2l_mlp, d2l_mlp_story):
    G, scene = d2l_mlp, d2l_mlp_story  # o - y with y = 0, and the 2 of "/ 2"
    constants = {node for node, role in G.nodes(data="role") if role == "const"}
    assert constants and not constants & set(scene.grad_labels)
    assert {node for node in G if G.nodes[node].get("kind") == "value"
            and G.nodes[node]["role"] != "const"} <= set(scene.grad_labels)


@pytest.mark.parametrize(("script", "words"), [
    ("examples/d2l_mlp.py", "the loss L = "), ("tests/torch_scripts/rnn.py", "loss = ")])
def test_the_title_card_says_the_loss_once(script, words):
    """'the loss L = 0.83', but 'loss = 0.83', not 'the loss loss = 0.83'."""
    from pathlib import Path

    from backpropviz.animate.cards import title_card
    from backpropviz.animate.mobjects import TextStore
    from backpropviz.script import graph_of_script
    from backpropviz.style import THEMES

    G = graph_of_script(Path(__file__).resolve().parent.parent / script, quiet=True)
    _, cue = title_card(G, TextStore(), THEMES["light"], 4, backward=True)
    said = cue.splitlines()[1]
    assert said.startswith(words) and "loss loss" not in cue


def test_the_title_card_names_the_parameters_that_get_a_gradient():
    """A frozen weight gets no gradient, so the card does not say the clip finds it; the
    parameters a module's operator holds are named (or counted) as what it finds."""
    from pathlib import Path

    from backpropviz.animate.cards import HEADLINE_EM, title_card
    from backpropviz.animate.mobjects import TextStore
    from backpropviz.animate.screen import CAPTION_WIDTH
    from backpropviz.script import graph_of_script
    from backpropviz.style import THEMES
    from backpropviz.views import drawn_graph

    scripts = Path(__file__).resolve().parent / "torch_scripts"
    G = graph_of_script(scripts / "frozen_weight.py", quiet=True)
    _, cue = title_card(G, TextStore(), THEMES["light"], 4, backward=True)
    assert ("with respect to model.backbone.bias, model.head.weight and model.head.bias, by "
            "the chain rule") in cue
    # (its headline, the model's expression, is wider than the frame in one row: in rows)
    card, cue = title_card(drawn_graph(G, modules=True), TextStore(), THEMES["light"], 4,
                           backward=True)
    headline = cue.splitlines()[0]
    assert headline == "loss = cross_entropy(model.head(ReLU(model.backbone(x))), y)"
    assert TextStore().text(headline, HEADLINE_EM, "#000000").width > CAPTION_WIDTH
    assert card.width <= CAPTION_WIDTH + 1e-9
    view = drawn_graph(graph_of_script(scripts / "wide_sequential.py", quiet=True),
                       modules=True)
    _, cue = title_card(view, TextStore(), THEMES["light"], 4, backward=True)
    assert ("with respect to model.0.weight, model.0.bias, model.2.weight and model.2.bias, "
            "by the chain rule") in cue
    resnet = drawn_graph(graph_of_script(scripts / "resnet_small.py", quiet=True), modules=1)
    _, cue = title_card(resnet, TextStore(), THEMES["light"], 4, backward=True)
    count = sum(len(attrs.get("parameter_names", ())) for _, attrs in resnet.nodes(data=True))
    # (tensors counted as tensors, with the numbers they hold as torch counts them)
    namespace = runpy.run_path(str(scripts / "resnet_small.py"))
    numbers = sum(p.numel() for p in namespace["model"].parameters() if p.requires_grad)
    assert count > 4 and (f"with respect to its {count} parameter tensors, {numbers:,} numbers"
                          in cue)
    # a scalar engine's parameters are numbers: counted as parameters
    mlp = graph_of_script(Path(__file__).resolve().parent.parent / "examples" /
                          "d2l_mlp_scalar.py", quiet=True)
    _, cue = title_card(mlp, TextStore(), THEMES["light"], 4, backward=True)
    assert "with respect to its 6 parameters, by the chain rule" in cue


# Two processors' flags as /proc/cpuinfo lists them: this machine's Xeon (AVX-512), and
# one with AVX2 only.
XEON = ("flags\t\t: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c abm bmi1 avx2 bmi2 "
        "avx512f avx512dq avx512cd avx512bw avx512vl avx512vnni")
AVX2_ONLY = "flags\t\t: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c abm bmi1 avx2 bmi2"


def test_x264_is_kept_off_avx512_where_it_encoded_the_same_frames_differently(tmp_path):
    """x264 as PyAV ships it encoded the same frames differently now and then on a
    processor with AVX-512 (this machine's: some frames 40-60 levels apart), so two renders
    of a clip, or one by one process and one by two, differed; kept to AVX2 it gave one
    stream every time. Elsewhere x264 chooses; and this machine's options are ones x264
    takes."""
    from backpropviz.animate.render import encoder_options, steady_x264

    assert steady_x264(XEON) == {"x264-params": "asm=AVX2"}
    assert steady_x264(AVX2_ONLY) == {} and steady_x264("") == {}
    assert steady_x264(XEON.replace(" avx2", "")) == {}  # (AVX-512 without AVX2: none)
    frames = [np.full((480, 854, 4), 255, np.uint8) for _ in range(3)]
    for frame, x in zip(frames, (100, 300, 500), strict=True):
        frame[200:260, x:x + 80, :3] = (31, 78, 156)
    # The clip's own options on this machine (on a processor without AVX2, asm=AVX2 would
    # stop x264: they are this processor's).
    with av.open(str(tmp_path / "steady.mp4"), "w") as movie:
        stream = movie.add_stream("libx264", rate=15, options=encoder_options(".mp4"))
        stream.width, stream.height, stream.pix_fmt = 854, 480, "yuv420p"
        for frame in frames:
            movie.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgba")))
        movie.mux(stream.encode())
    with av.open(str(tmp_path / "steady.mp4")) as movie:
        decoded = [frame.to_ndarray(format="rgb24") for frame in movie.decode(video=0)]
    assert len(decoded) == 3
    assert np.abs(decoded[1][230, 340].astype(int) - (31, 78, 156)).max() < 12
