"""A clip rendered by several processes at once, joined without encoding it again.

manim encodes every animation of a scene (each ``play`` and ``wait``) as a
partial movie of its own, then joins them by copying their packets. Here one
process, the conductor, runs the scene's story once, skipping every animation
as manim skips one (for ``--from-animation-number``): played to its end in one
step, no frame drawn. Every RUN_SECONDS of the clip or so, once an animation
has begun (its mobjects copied, its targets made), the conductor forks a
renderer, which goes on from that very state as a render in one process
would: it draws and encodes that animation and the ones after it, up to the
start of the next run (which the conductor marks, in memory they share, as it
reaches it), and leaves. At most ``jobs`` renderers work at once. So the
story is built once for the whole clip, and again only by the renderer that
draws each part; and a process is started (and its memory first written:
a tenth of a render's time at 1080p, when each animation had its own) once a
run, not once an animation.

manim's skip advances the clock by the animation's duration where a render
advances it a frame at a time, so later cues and frames would drift; the
conductor then sets the clock to what a render's frames would have made it,
added up the same way, to the last bit. (No mobject of a clip moves by an
updater, whose motion would depend on the time steps.) The partial movies are
joined in order, packet by packet, as manim joins its own, so the clip has the
frames of a render in one process (tests/test_parallel_clip.py compares them;
the encoder is kept off x264's AVX-512 code, which encoded the same frames
differently now and then: render.steady_x264); the subtitles are the
conductor's, which told the whole story.
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import pathlib
import pickle
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .. import batch
from .formats import AnimateError

__all__ = ["default_jobs", "render_shared"]

# A renderer draws at least this much of the clip (seconds) before another takes over.
RUN_SECONDS = 5.0


def default_jobs() -> int:
    """The cores this process may use (batch's count); 1 in a process that runs other
    threads (a notebook's kernel), which forking could leave holding a lock no thread
    releases."""
    return 1 if threading.active_count() > 1 else max(1, batch.default_jobs())


def render_shared(make_scene: Callable[..., Any], settings: dict[str, Any], jobs: int,
                  options: dict[str, Any], movie: pathlib.Path, progress: bool = False) -> float:
    """Render the scene ``make_scene(progress=..., **options)`` with ``jobs`` renderer
    processes into ``movie`` (subtitles beside it, if the scene has any); its length in
    seconds. ``settings`` are manim's, as for a render in one process."""
    import manim

    renderers, run = _Renderers(jobs), _Run()
    # manim prunes its partial movies to the newest 100 as a scene ends: here the
    # conductor's scene ends before the renderers' movies are joined.
    settings = {**settings, "max_files_cached": -1}
    try:
        with manim.tempconfig(settings):
            scene = make_scene(progress=progress, **options)
            renderer = scene.renderer
            manims_play, manims_begin = renderer.play, scene.begin_animations

            def begin_animations() -> None:
                manims_begin()
                if not renderers.forked and run.starts and renderers.fork():  # a renderer
                    _rendering(scene, start, lambda: renderers.leave(run.movies(renderer)))

            def play(*args: Any, **kwargs: Any) -> None:
                nonlocal start
                if renderers.forked:  # (a renderer: its run drawn, up to the next's start)
                    if run.ended(renderer.num_plays):
                        renderers.leave(run.movies(renderer))
                    played(manims_play, args, kwargs)
                    return
                start = renderer.time
                run.plan(renderer.num_plays, start)
                try:
                    with _skipped(renderer, scene):
                        manims_play(*args, **kwargs)
                except BaseException as error:  # any, told to the conductor by a renderer
                    if renderers.forked:
                        renderers.fail(error)
                    raise

            def played(play: Callable[..., Any], args: Any, kwargs: Any) -> None:
                try:
                    play(*args, **kwargs)
                except BaseException as error:  # any, told to the conductor
                    renderers.fail(error)

            start = 0.0
            renderer.play, scene.begin_animations = play, begin_animations
            scene.render()
            parts = renderers.finish()
            writer = renderer.file_writer
            subtitles = pathlib.Path(writer.movie_file_path).with_suffix(".srt")
            seconds = float(scene.time)
    finally:
        if not renderers.forked:
            renderers.stop()
            run.close()
        gc.unfreeze()
    _join_movies(parts, movie, transparent=bool(settings.get("transparent")))
    if subtitles.exists():
        subtitles.replace(movie.with_suffix(".srt"))
    return seconds


def _rendering(scene: Any, start: float, leave: Callable[[], None]) -> None:
    """In a renderer, just forked from an animation the conductor has begun to skip: that
    animation rendered instead, as manim's play goes on (its frames drawn, its partial
    movie written), the clock back where the conductor's skip found it; and the ones
    after it, as a render in one process plays them, until ``leave`` is called (at the
    next run's start, or at the scene's end)."""
    scene.progress = False  # the conductor tells the progress
    renderer = scene.renderer
    for name in ("update_frame", "get_frame", "freeze_current_frame"):
        del renderer.__dict__[name]  # (the skip's stand-ins)
    del scene.__dict__["get_moving_and_static_mobjects"]
    # What moves and what stands still, as manim's begin_animations sorts them out just
    # where this process was forked: the skip did not, drawing nothing.
    scene.moving_mobjects, scene.static_mobjects = \
        scene.get_moving_and_static_mobjects(scene.animations)
    renderer._original_skipping_status = renderer.skip_animations = False
    renderer.time = start
    writer = renderer.file_writer
    writer.partial_movie_files.pop()  # the skip's placeholder, for the movie it now writes
    writer.sections[-1].partial_movie_files.pop()
    writer.add_partial_movie_file(f"uncached_{renderer.num_plays:05}")
    writer.begin_animation(True, animation_index=renderer.num_plays)
    renderer.scene_finished = lambda scene: leave()  # (the conductor ends the clip)


class _Run:
    """Which animations start a renderer's run (the conductor decides each as it reaches
    it, and a renderer reads it when it gets there: in memory the processes share) and
    which movies a renderer has written. (A process each animation had the kernel
    copying and clearing pages for a tenth of a render's time at 1080p; a process each
    run, a sixth to a half less of that: the D2L MLP's clip at 480p, -j 2, 9.4 s ->
    9.1 s.)"""

    SIZE = 1 << 20  # animations a clip may have (a byte each)

    def __init__(self) -> None:
        self.shared = mmap.mmap(-1, 8 + self.SIZE)  # (how far decided, then a flag each)
        self.began = 0.0  # when the current run began (clip seconds)
        self.starts = False  # whether the animation under way starts a run
        self.first = -1  # in a renderer, the animation its run starts with
        self.conductor = os.getpid()

    def plan(self, number: int, now: float) -> None:
        """In the conductor, as it reaches animation ``number`` at ``now``: whether it
        starts a run, told to the renderers."""
        if number >= self.SIZE:
            raise AnimateError("the clip has too many animations to render in several "
                               "processes; try again with -j 1")
        self.starts = number == 0 or now - self.began >= RUN_SECONDS
        if self.starts:
            self.began = now
            self.first = number
        self.shared[8 + number] = int(self.starts)
        self.shared[:8] = (number + 1).to_bytes(8, "little")

    def ended(self, number: int) -> bool:
        """In a renderer, as it reaches animation ``number``: whether another run starts
        there (waiting, if need be, for the conductor to decide it)."""
        while int.from_bytes(self.shared[:8], "little") <= number:
            if os.getppid() != self.conductor:  # (the conductor is gone: so is the clip)
                os._exit(1)
            time.sleep(0.001)
        return number > self.first and bool(self.shared[8 + number])

    def movies(self, renderer: Any) -> tuple[str, list[str]]:
        """In a renderer, finished: what to tell the conductor (its movies, in order)."""
        writer = renderer.file_writer
        writer.join_all_encode_jobs()
        return ("movies", [str(movie) for movie in writer.partial_movie_files[self.first:]
                           if movie is not None])

    def close(self) -> None:
        self.shared.close()


class _Renderers:
    """The forked renderer processes: at most ``jobs`` at once, each rendering one
    animation and telling its movie's path (or its error) down a pipe."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.running: dict[int, tuple[int, int]] = {}  # pid: (animation, pipe to read)
        self.movies: dict[int, list[str]] = {}
        self.forked = False  # whether this process is a renderer
        self._told = -1  # a renderer's pipe to the conductor

    def fork(self) -> bool:
        """Start a renderer once fewer than ``jobs`` run: True in the renderer (which is to
        render the animation under way and ``leave``), False in the conductor."""
        while len(self.running) >= self.jobs:
            self._reap()
        number = len(self.movies) + len(self.running)
        read, write = os.pipe()
        # What is alive now the collector leaves alone in the renderer, which would
        # otherwise write to (and so copy) every page of the heap it inherits.
        gc.freeze()
        try:
            pid = os.fork()
        except OSError as error:
            os.close(read)
            os.close(write)
            raise AnimateError(f"could not start a process to render part of the clip "
                               f"({error.strerror}); try again with -j 1") from None
        if pid == 0:
            os.close(read)
            self.forked, self._told = True, write
            return True
        os.close(write)
        self.running[pid] = (number, read)
        return False

    def leave(self, told: tuple[str, Any]) -> None:
        """In a renderer: tell the conductor how it went (its movies' paths, or its error),
        and end the process at once."""
        status = 0 if told[0] == "movies" else 1
        try:
            with os.fdopen(self._told, "wb") as pipe:
                pickle.dump(told, pipe)
        finally:
            os._exit(status)

    def fail(self, error: BaseException) -> None:
        """In a renderer: tell the conductor ``error`` (in a line), and end the process."""
        self.leave(("error", f"{type(error).__name__}: {error}"[:1000]))

    def _reap(self) -> None:
        """Wait for a renderer to tell how it went (its pipe closes as it leaves), and
        for it to end: only this conductor's own processes, never another child's."""
        pipes = {read: pid for pid, (_, read) in self.running.items()}
        ready, _, _ = select.select(list(pipes), [], [])
        pid = pipes[ready[0]]
        number, read = self.running.pop(pid)
        with os.fdopen(read, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        told = pickle.loads(data) if data else ("error", "it stopped (out of memory?)")
        if told[0] != "movies" or status != 0:
            raise AnimateError(f"a process rendering part of the clip failed ({told[1]}); "
                               "try again with -j 1")
        self.movies[number] = told[1]

    def finish(self) -> list[str]:
        """Wait for every renderer; the movies in the order of their animations."""
        while self.running:
            self._reap()
        return [movie for number in sorted(self.movies) for movie in self.movies[number]]

    def stop(self) -> None:
        """Stop any renderer still working (after a failure or an interrupt)."""
        for pid, (_, read) in self.running.items():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            os.close(read)
        self.running.clear()


@contextlib.contextmanager
def _skipped(renderer: Any, scene: Any) -> Iterator[None]:
    """While an animation plays: played to its end in one step, as manim skips one,
    no frame drawn, none encoded, no partial movie; then the clock as a render leaves it.
    Nor are the scene's mobjects sorted into those that move and those that stand still
    (for the frames' still background): a walk of every mobject's family on screen, a
    sixth of a skip's time, left to a renderer forked to draw the animation."""
    start, frozen = renderer.time, []
    renderer.update_frame = lambda *args, **kwargs: None
    renderer.get_frame = lambda: None
    renderer.freeze_current_frame = frozen.append
    renderer._original_skipping_status = True
    scene.get_moving_and_static_mobjects = lambda animations: ([], [])
    try:
        yield
    finally:  # the class's own methods again
        drawn = "update_frame" not in renderer.__dict__  # (a renderer forked inside drew it)
        for name in ("update_frame", "get_frame", "freeze_current_frame"):
            renderer.__dict__.pop(name, None)
        scene.__dict__.pop("get_moving_and_static_mobjects", None)
        renderer._original_skipping_status = renderer.skip_animations = False
    if not drawn:  # (a render's frames set its own clock)
        renderer.time = _clock_after(start, scene.duration, frozen, renderer.camera.frame_rate)


def _clock_after(start: float, duration: float, frozen: list[float], frame_rate: float) -> float:
    """The clock after a render of an animation of ``duration`` seconds from ``start``:
    a still frame held (``frozen``) adds its frames at once, a moving one a frame at a
    time (CairoRenderer.add_frame), each of the frames of manim's time progression."""
    dt = 1 / frame_rate
    if frozen:
        return start + int(frozen[0] / dt) * dt
    for _ in range(len(np.arange(0, duration, dt))):
        start += dt
    return start


def _join_movies(parts: list[str], movie: pathlib.Path, *, transparent: bool = False) -> None:
    """Join partial movies into ``movie`` by copying their packets (no encoding)."""
    import av

    manifest = movie.with_name(movie.stem + "-parts.txt")
    manifest.write_text("".join(f"file '{pathlib.Path(part).as_posix()}'\n" for part in parts),
                        encoding="utf-8")
    try:
        with av.open(str(manifest), format="concat", options={"safe": "0"}) as joined, \
                av.open(str(movie), mode="w") as output:
            source = joined.streams.video[0]
            stream = output.add_stream_from_template(template=source)
            if transparent and movie.suffix == ".webm":
                stream.pix_fmt = "yuva420p"  # (as manim keeps the alpha channel)
            for packet in joined.demux(source):
                if packet.dts is None:  # the flushing packets demux ends with
                    continue
                packet.dts = None  # each part starts its own; libav numbers them anew
                packet.stream = stream
                output.mux(packet)
    finally:
        manifest.unlink(missing_ok=True)
