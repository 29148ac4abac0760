"""A clip rendered by several processes has the frames and subtitles of one rendered by one."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

if importlib.util.find_spec("manim") is None:
    pytest.skip("manim is not installed (pip install 'backpropviz[animate]')",
                allow_module_level=True)

import av
import manim

from backpropviz.animate.render import render_scene


def frames(path) -> list[np.ndarray]:
    with av.open(str(path)) as movie:
        return [frame.to_ndarray(format="rgb24") for frame in movie.decode(video=0)]


def assert_same_clip(one, two) -> None:
    first, second = frames(one), frames(two)
    assert len(first) == len(second) > 0
    different = {k: (int(np.abs(a.astype(int) - b).max()), int((a != b).any(axis=2).sum()))
                 for k, (a, b) in enumerate(zip(first, second, strict=True))
                 if not np.array_equal(a, b)}
    assert different == {}, "frame: (most levels apart, pixels apart)"
    assert one.with_suffix(".srt").read_text() == two.with_suffix(".srt").read_text()


class Moves(manim.MovingCameraScene):
    """Short animations of odd lengths (frames are not whole multiples of them), waits,
    a camera move and subtitles: what a sweep is made of."""

    def __init__(self, progress: bool = False, **options) -> None:
        super().__init__()

    def construct(self) -> None:
        square = manim.Square(color=manim.BLUE)
        self.add_subcaption("a square", duration=0.7)
        self.play(manim.Create(square), run_time=0.37)
        self.wait(0.23)
        for k in range(5):
            self.add_subcaption(f"move {k}", duration=0.4)
            self.play(square.animate.shift(0.3 * manim.RIGHT).rotate(0.2), run_time=0.11 * k + 0.2)
            self.play(self.camera.frame.animate.move_to(square), run_time=0.29)
        self.wait(0.41)


@pytest.mark.parametrize(("jobs", "run"), [(2, 0.4), (3, 1.0)])
def test_a_scene_shared_out_between_processes_is_the_scene_rendered_by_one(tmp_path, jobs, run,
                                                                          monkeypatch):
    """... each renderer drawing a run of animations, here short ones (a clip's are some
    5 s): a run each move or two, many taken over, by two or three at once."""
    from backpropviz.animate import parallel

    monkeypatch.setattr(parallel, "RUN_SECONDS", run)
    serial, shared = tmp_path / "serial.mp4", tmp_path / "shared.mp4"
    render_scene(Moves, serial, quality="l", transparent=False, progress=False, jobs=1)
    render_scene(Moves, shared, quality="l", transparent=False, progress=False, jobs=jobs)
    assert_same_clip(serial, shared)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["serial.mp4", "serial.srt", "shared.mp4", "shared.srt"])  # no parts left over


# Rendered in a process of their own, as the command line renders a clip. (Clips such
# as mlp3's were not the same to the pixel rendered twice, -j 1 both times, though every
# frame drawn was the same bytes: x264's AVX-512 code encoded the same frames
# differently now and then. Kept off it, mlp3's backward clip is the same by -j 1 twice
# and by -j 2; this test and its suite's share of cores keep to add_mul's.) At triple
# speed: its quick beats are shorter than a frame, whose clock the conductor keeps as a
# render's frames would.
_BOTH = """
import sys
from backpropviz.animate import render_video
from backpropviz.script import graph_of_script
G = graph_of_script(sys.argv[1], quiet=True)
render_video(G, sys.argv[2], phase="backward", speed=3.0, progress=False, jobs=1)
render_video(G, sys.argv[3], phase="backward", speed=3.0, progress=False, jobs=2)
"""


def test_the_backward_sweep_in_two_processes_is_the_sweep_in_one(tmp_path):
    serial, shared = tmp_path / "serial.mp4", tmp_path / "shared.mp4"
    script = Path(__file__).resolve().parent.parent / "examples" / "add_mul.py"
    subprocess.run([sys.executable, "-c", _BOTH, str(script), str(serial), str(shared)],
                   check=True, timeout=600, cwd=tmp_path)
    assert_same_clip(serial, shared)


# What each renderer starts from is the state the conductor reached by skipping the
# animations before it, each in one step; a render reaches it frame by frame. The two
# must agree to the last bit (else a pixel of some later frame can differ): checked
# after every animation of whole clips, the render's side played as manim's dry run.


def _state(scene) -> tuple:
    """The clock, the camera, and every mobject on screen as drawn: points, colours,
    widths and depth, as bytes."""
    import hashlib

    digest = hashlib.sha256()
    for mobject in scene.mobjects:
        for part in mobject.get_family():
            digest.update(np.ascontiguousarray(part.points).tobytes())
            for colours in ("fill_rgbas", "stroke_rgbas", "background_stroke_rgbas"):
                digest.update(np.ascontiguousarray(getattr(part, colours, [])).tobytes())
            digest.update(repr((type(part).__name__, getattr(part, "stroke_width", None),
                                part.z_index)).encode())
    digest.update(np.ascontiguousarray(scene.camera.frame.points).tobytes())
    return scene.renderer.num_plays, scene.renderer.time, digest.hexdigest()


def _states(make_scene, skipped: bool, media: Path) -> list[tuple]:
    from backpropviz.animate.parallel import _skipped

    settings = {"media_dir": str(media), "disable_caching": True, "progress_bar": "none",
                "verbosity": "WARNING", "quality": "low_quality", "dry_run": not skipped}
    states = []
    with manim.tempconfig(settings):
        scene = make_scene()
        scene.camera.capture_mobjects = lambda mobjects, **kwargs: None
        renderer = scene.renderer
        manims_play = renderer.play

        def play(*args, **kwargs) -> None:
            if skipped:
                with _skipped(renderer, scene):
                    manims_play(*args, **kwargs)
            else:
                manims_play(*args, **kwargs)
            states.append(_state(scene))

        renderer.play = play
        scene.render()
    return states


@pytest.fixture(scope="module")
def loop_run():
    from backpropviz.options import Options
    from backpropviz.train_record import record_training

    script = Path(__file__).resolve().parent.parent / "examples" / "training_loop.py"
    return record_training(script, Options(iterations=2), quiet=True)


@pytest.mark.parametrize("clip", ["fork", "training_loop"])
def test_an_animation_skipped_leaves_what_its_frames_leave(clip, example, loop_run, tmp_path):
    from backpropviz.animate.sweep import BackpropScene
    from backpropviz.animate.training import TrainingScene

    if clip == "training_loop":
        def make_scene():
            return TrainingScene(loop_run, progress=False)
    else:
        G = example(clip)

        def make_scene():
            return BackpropScene(G, progress=False)
    rendered = _states(make_scene, False, tmp_path / "rendered")
    skipped = _states(make_scene, True, tmp_path / "skipped")
    assert len(rendered) == len(skipped) > 10
    assert [k for k, (a, b) in enumerate(zip(rendered, skipped, strict=True)) if a != b] == []


class _Breaks(manim.Animation):
    """An animation that fails on any frame between its first and its last: as a
    renderer draws it, never as the conductor skips it."""

    def interpolate_mobject(self, alpha: float) -> None:
        if 0 < alpha < 1:
            raise ValueError("no such frame")


class Failing(manim.Scene):
    def __init__(self, progress: bool = False, **options) -> None:
        super().__init__()

    def construct(self) -> None:
        square = manim.Square()
        self.play(manim.Create(square), run_time=0.3)
        self.play(_Breaks(square), run_time=0.3)


def test_a_renderer_that_fails_is_one_clear_error_and_leaves_no_file(tmp_path):
    from backpropviz.animate.formats import AnimateError

    target = tmp_path / "clip.mp4"
    with pytest.raises(AnimateError, match=r"failed \(ValueError: no such frame\).*-j 1"):
        render_scene(Failing, target, quality="l", transparent=False, progress=False, jobs=2)
    assert list(tmp_path.iterdir()) == []


class Unmade(manim.Scene):
    def __init__(self, progress: bool = False, **options) -> None:
        raise ValueError("no such scene")


def test_a_scene_that_cannot_be_made_is_its_own_error_and_leaves_no_file(tmp_path):
    """An error in making the scene, before any renderer starts, is told as itself."""
    with pytest.raises(ValueError, match="no such scene"):
        render_scene(Unmade, tmp_path / "clip.mp4", quality="l", transparent=False,
                     progress=False, jobs=2)
    assert list(tmp_path.iterdir()) == []
