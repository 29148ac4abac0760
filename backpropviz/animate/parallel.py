"""A clip rendered by several processes at once, joined without encoding it again.

manim encodes every animation of a scene (each ``play`` and ``wait``) as a
partial movie of its own, then joins them by copying their packets. Here each
of ``jobs`` forked workers runs the whole scene but draws and encodes only the
animations whose number it owns (every ``jobs``-th, so long and short steps
are shared out evenly). The others it plays blind: every frame's time step
and every mobject's motion as in a render, but no frame drawn or written.
(manim's own skipping, as for ``--from-animation-number``, jumps to an
animation's end in one step, which advances the clock by its duration rather
than by its frames, so later cues and frames would drift.) The partial movies
are then joined in order, packet by packet, as manim joins its own, so the clip
has the frames of a render in one process (tests/test_animate.py compares them).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import pathlib
import shutil
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .. import batch
from .formats import AnimateError

__all__ = ["default_jobs", "render_shared"]


def default_jobs() -> int:
    """The cores this process may use (batch's count); 1 in a process that runs other
    threads (a notebook's kernel), which forking could leave holding a lock no thread
    releases."""
    return 1 if threading.active_count() > 1 else max(1, batch.default_jobs())


# What the forked workers render: set just before they are forked, so that
# nothing (the scene's graph, its factory) has to be pickled to reach them.
_job: dict[str, Any] = {}


def _worker(worker: int) -> tuple[list[tuple[int, str]], float, str | None]:
    """Render the animations numbered ``worker`` modulo the number of jobs;
    their partial movies by number, the scene's length, and its subtitles."""
    import manim

    jobs, settings = _job["jobs"], dict(_job["settings"])
    settings["media_dir"] = os.path.join(settings["media_dir"], f"worker-{worker}")
    with manim.tempconfig(settings):
        # The first worker tells the progress: each plays the whole story.
        scene = _job["make_scene"](progress=_job["progress"] and worker == 0, **_job["options"])
        renderer = scene.renderer
        manims_play = renderer.play

        def play(*args: Any, **kwargs: Any) -> None:
            if renderer.num_plays % jobs == worker:
                manims_play(*args, **kwargs)
                return
            with _blind(renderer):
                manims_play(*args, **kwargs)

        renderer.play = play
        scene.render()
        writer = renderer.file_writer
        movies = [(index, str(path)) for index, path in enumerate(writer.partial_movie_files)
                  if path is not None]
        subtitles = pathlib.Path(writer.movie_file_path).with_suffix(".srt")
        return movies, float(scene.time), str(subtitles) if subtitles.exists() else None


@contextlib.contextmanager
def _blind(renderer: Any) -> Iterator[None]:
    """While an animation plays: no frame drawn, none encoded, no partial movie."""
    writer = renderer.file_writer
    add_partial, begin, end = (writer.add_partial_movie_file, writer.begin_animation,
                               writer.end_animation)
    renderer.update_frame = lambda *args, **kwargs: None
    renderer.get_frame = lambda: None
    writer.write_frame = lambda *args, **kwargs: None
    writer.add_partial_movie_file = lambda name: add_partial(None)
    writer.begin_animation = lambda allow_write=False, **kwargs: begin(False, **kwargs)
    writer.end_animation = lambda allow_write=False: end(False)
    try:
        yield
    finally:  # the class's own methods again
        for name in ("update_frame", "get_frame"):
            del renderer.__dict__[name]
        for name in ("write_frame", "add_partial_movie_file", "begin_animation",
                     "end_animation"):
            del writer.__dict__[name]


def render_shared(make_scene: Callable[..., Any], settings: dict[str, Any], jobs: int,
                  options: dict[str, Any], movie: pathlib.Path, progress: bool = False) -> float:
    """Render the scene ``make_scene(progress=..., **options)`` with ``jobs`` worker
    processes into ``movie`` (subtitles beside it, if the scene has any); its length in
    seconds. ``settings`` are manim's, as for a render in one process."""
    _job.update(make_scene=make_scene, settings=settings, jobs=jobs, options=options,
                progress=progress)
    context = multiprocessing.get_context("fork")  # the workers inherit _job as it is
    try:
        with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
            results = list(pool.map(_worker, range(jobs)))
    except concurrent.futures.process.BrokenProcessPool:
        raise AnimateError("a process rendering part of the clip stopped (out of memory?); "
                           "try again with -j 1") from None
    finally:
        _job.clear()
    numbered = sorted(part for movies, _, _ in results for part in movies)
    if [index for index, _ in numbered] != list(range(len(numbered))):
        raise AnimateError("the processes rendering the clip did not share its animations "
                           "out exactly: render it with -j 1")
    _join_movies([path for _, path in numbered], movie,
                transparent=bool(settings.get("transparent")))
    _, seconds, subtitles = results[0]
    if subtitles is not None:
        shutil.copyfile(subtitles, movie.with_suffix(".srt"))
    return seconds


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
