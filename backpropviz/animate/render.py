"""Render the backward-sweep clip of an IR graph to a video file, atomically, with subtitles."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import pathlib
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from ..files import make_folder, move_into_place
from ..script import as_graph
from ..style import SPEEDS, THEMES
from .formats import (
    FORMATS,
    MAX_NODES,
    PHASES,
    QUALITIES,
    TRANSPARENT_FORMATS,
    AnimateError,
    check_format,
    check_size,
    check_video,
    require_manim,
)
from .parallel import default_jobs, render_shared

# FORMATS ... require_manim are also importable from here, where they were first.
__all__ = ["FORMATS", "MAX_NODES", "PHASES", "QUALITIES", "TRANSPARENT_FORMATS", "AnimateError",
           "render_scene", "render_video", "require_manim"]


def render_video(G: Any, path: str | os.PathLike, *, names: Any = None, quality: str = "l",
                 phase: str = "both", theme: str = "light", speed: float = 1.0,
                 rankdir: str = "LR", precision: int = 4, progress: bool = True,
                 transparent: bool = False, max_nodes: int = MAX_NODES,
                 jobs: int | None = None, memory: bool = False) -> pathlib.Path:
    """Render the forward and/or backward pass of ``G`` to ``path`` and return the path.

    ``G`` is an IR graph, or a Value/Tensor root or roots named after ``names``
    (as for ``draw``).
    The format follows the suffix (.mp4 .gif .webm .mov). Subtitles with the
    chain-rule captions go beside it (same name, .srt). The background is
    transparent when ``transparent`` is true or the theme has none
    ("transparent", "transparent-dark"): .webm and .mov only. With
    ``progress``, a progress line and finally the output path and the clip's
    length are printed to stderr. With ``memory``, a meter under the title shows the
    bytes kept for backward as the passes go. ``jobs`` processes render it at once (default: one a
    core; animate/parallel.py), with the same frames as one. Nothing is left
    at ``path`` if rendering fails or is interrupted.
    """
    G = as_graph(G, names)
    target = pathlib.Path(path)
    suffix = check_format(target)
    if quality not in QUALITIES:
        raise AnimateError(f"unknown quality: {quality!r} (must be one of {list(QUALITIES)})")
    if phase not in PHASES:
        raise AnimateError(f"unknown phase: {phase!r} (must be one of {list(PHASES)})")
    check_video(theme, suffix)
    if not SPEEDS[0] <= speed <= SPEEDS[1]:
        raise AnimateError(f"speed must be {SPEEDS[0]:g} to {SPEEDS[1]:g}, got {speed!r}")
    transparent = transparent or THEMES[theme].transparent
    if transparent and suffix not in TRANSPARENT_FORMATS:
        raise AnimateError(f"a transparent background needs one of {list(TRANSPARENT_FORMATS)}, "
                           f"not {suffix!r}")
    check_size(G, max_nodes)
    if not G.graph.get("backward_order") and phase != "forward":
        if G.graph.get("unwatched"):  # gradients, but no steps: say why
            raise AnimateError(f"cannot animate the backward pass: {G.graph['unwatched']}")
        raise AnimateError("the graph has no backward record; call .backward() on the output "
                           "in the script, or pass phase='forward'")
    require_manim()

    def sweep(**options: Any) -> Any:
        from .sweep import BackpropScene

        return BackpropScene(G, **options)

    return render_scene(sweep, target, quality=quality, phase=phase, theme=theme, speed=speed,
                        rankdir=rankdir, precision=precision, progress=progress,
                        transparent=transparent, jobs=jobs, memory=memory)


def render_scene(make_scene: Callable[..., Any], target: pathlib.Path, *, quality: str,
                 transparent: bool, progress: bool, jobs: int | None = None,
                 **options: Any) -> pathlib.Path:
    """Render the scene ``make_scene(**options, progress=...)`` makes to ``target`` (its
    format by its suffix, options checked already), subtitles beside it; nothing is left at
    ``target`` if rendering fails or is interrupted."""
    suffix = target.suffix.lower()
    make_folder(target.parent)
    with tempfile.TemporaryDirectory(prefix="backpropviz-") as scratch:
        movie, seconds = _render_in(scratch, make_scene, suffix, quality=quality,
                                    progress=progress, transparent=transparent,
                                    jobs=default_jobs() if jobs is None else jobs, **options)
        subtitles = movie.with_suffix(".srt")
        if subtitles.exists():
            move_into_place(subtitles, target.with_suffix(".srt"))
        move_into_place(movie, target)
    if progress:
        print(f"wrote {target}: a clip {seconds:.1f} s long", file=sys.stderr)
    return target


def _render_in(scratch: str, make_scene: Callable[..., Any], suffix: str, *, quality: str,
               transparent: bool, progress: bool, jobs: int,
               **options: Any) -> tuple[pathlib.Path, float]:
    """Render in the directory ``scratch``; the movie's path there and its length."""
    import manim

    # manim 0.22 builds a good palette for a GIF, then encodes it as "rgb8",
    # a fixed 3-3-2 palette that fringes every anti-aliased edge in yellow; so
    # a GIF is rendered as MP4 and converted here with its own palette.
    encoded = ".mp4" if suffix == ".gif" else suffix
    settings = {
        "quality": QUALITIES[quality],
        "format": encoded[1:],
        "media_dir": scratch,
        "output_file": "clip",
        # Caching hashes every mobject of every animation: slow for big scenes
        # and useless for a one-off render.
        "disable_caching": True,
        "progress_bar": "none",
        "verbosity": "WARNING",
        "transparent": transparent,
        # Encode a finished animation while the next one is drawn.
        "max_inflight_encoders": 4,
        "video_encoder_options": encoder_options(encoded),
    }
    with _unsaid_warnings():
        if jobs > 1:
            movie = pathlib.Path(scratch) / f"clip{encoded}"
            seconds = render_shared(make_scene, settings, jobs, options, movie, progress)
        else:
            with manim.tempconfig(settings):
                scene = make_scene(progress=progress, **options)
                scene.render()
                movie = pathlib.Path(scene.renderer.file_writer.movie_file_path)
                seconds = float(scene.time)
    if suffix == ".gif":
        gif = movie.with_suffix(".gif")
        _to_gif(movie, gif)
        movie = gif
    return movie, seconds


def encoder_options(encoded: str) -> dict[str, str]:
    """The options of the clip's encoder for the format it is encoded in (".mp4", also
    for a GIF; ".webm"; ".mov")."""
    # Each encoder on one thread (several run at once anyway, each an animation).
    options = {"threads": "1"}
    if encoded == ".mp4":
        # x264's "veryfast" preset: a third less of its time than its default, "medium"
        # (a clip's CPU time 10-15% less), the file a tenth smaller, 41 dB from the
        # frames drawn rather than 44 and no difference to be seen in the text and
        # lines of a clip at three times its size. (It was once thought to encode
        # differently run to run; that was x264's AVX-512 code, which any preset ran.)
        options |= {"preset": "veryfast", **_x264_steady()}
    if encoded == ".webm":
        # libvpx's VP9 in its "realtime" mode at constant quality 20. Its "good" mode
        # (cpu-used 5) spent most of a clip's time starting each animation's movie on
        # a key frame, for colour and alpha both: the D2L MLP's see-through WebM at
        # 480p took 132 CPU-s (86 s), now 36 (26 s, as its MP4), the file 4.5 -> 6.1 MB.
        # What is drawn comes out nearer the frames than before (the boxes' colours 2.0
        # levels off, not 3.1; alpha 0.09, not 0.18), the background at alpha 0 to its
        # corners. (At its default bitrate rather than a quality, realtime left the
        # background at alpha 1 of 255.)
        options |= {"deadline": "realtime", "cpu-used": "8", "crf": "20", "b": "0"}
    return options


@functools.cache
def _x264_steady() -> dict[str, str]:
    """x264's options for this processor (read from /proc/cpuinfo): steady_x264's."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return steady_x264(info.read())
    except OSError:
        return {}


def steady_x264(cpuinfo: str) -> dict[str, str]:
    """x264's options that keep it off its AVX-512 code on a processor that has it (its
    flags as /proc/cpuinfo lists them). There (this machine's Xeon, with the x264 PyAV
    ships) the same frames encoded twice came out different now and then, some frames of
    a clip 40-60 levels apart on thousands of pixels: a clip rendered twice, or by one
    process and by two (animate/parallel.py), differed from itself though every frame
    drawn was the same to the bit. Kept to AVX2 (and what x264 counts with it), it gave
    one stream every time, as quickly. On a processor without AVX-512, x264 chooses."""
    flags = set(next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines()
                      if line.startswith("flags") and ":" in line), []))
    if "avx512f" not in flags or not {"avx2", "fma", "bmi1", "bmi2", "abm"} <= flags:
        return {}
    return {"x264-params": "asm=AVX2"}


class _Unsaid(logging.Filter):
    """manim's warnings of what the clip means to do: an animation shorter than a frame,
    which it shows for a frame (at --speed 3 and more a quick beat is that short, as
    meant: a dozen warnings of six lines each under a clip rendered fine), and WebM,
    "slower than other formats", asked for."""

    MEANT = ("is too short for the current frame rate", "this can be slower than other")

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(text in record.getMessage() for text in self.MEANT)


@contextlib.contextmanager
def _unsaid_warnings() -> Iterator[None]:
    """manim's warnings of what the clip means to do (_Unsaid) left unsaid."""
    from manim import logger

    quiet = _Unsaid()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _to_gif(source: pathlib.Path, target: pathlib.Path) -> None:
    """Convert a video to a GIF with one palette made from all its frames.

    A clip's colours are few (theme colours and their anti-aliased blends),
    so a single 256-colour palette without dithering keeps edges clean.
    """
    import av

    with av.open(str(source)) as movie, av.open(str(target), mode="w") as gif:
        video = movie.streams.video[0]
        stream = gif.add_stream("gif", rate=video.average_rate)
        stream.width, stream.height, stream.pix_fmt = video.width, video.height, "pal8"
        graph = av.filter.Graph()
        frames_in = graph.add_buffer(template=video)
        split = graph.add("split")
        palette = graph.add("palettegen", "stats_mode=full")
        quantize = graph.add("paletteuse", "dither=none")
        frames_out = graph.add("buffersink")
        frames_in.link_to(split)
        split.link_to(palette, 0, 0)
        split.link_to(quantize, 1, 0)
        palette.link_to(quantize, 0, 1)
        quantize.link_to(frames_out)
        graph.configure()
        for frame in movie.decode(video):
            graph.push(frame)
        graph.push(None)  # the palette is known only once every frame is in
        while True:
            try:
                frame = graph.pull()  # keeps the source's timestamps
            except (av.error.EOFError, av.error.BlockingIOError):
                break
            gif.mux(stream.encode(frame))
        gif.mux(stream.encode())
