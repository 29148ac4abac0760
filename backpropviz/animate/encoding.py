"""A held frame converted for the encoder once, not once for each time it is shown.

manim writes a still moment (a wait on a caption, a pause between steps) as one
frame repeated, and its encoder makes a video frame from the pixels and
converts it to the stream's pixel format (RGBA to YUV) again for every repeat:
some 1.4 ms a frame at 480p, of the 4 ms a frame takes to encode. A third of
the D2L MLP clip's frames are such repeats. Here the frame is made and
converted once, as the encoder would convert it (its size, format and
threads), and that one frame is encoded as often as it is held: the same
stream, byte for byte.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import av
from av.video.reformatter import VideoReformatter
from manim import MovingCamera, MovingCameraScene, config
from manim.constants import RendererType
from manim.renderer.cairo_renderer import CairoRenderer
from manim.scene.scene_file_writer import SceneFileWriter
from manim.scene.video_segment_encoder import VideoSegmentEncoder

__all__ = ["HeldFrameScene"]


class _HeldFrameEncoder(VideoSegmentEncoder):
    """manim's encoder of one animation's frames, a repeated frame converted once."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._reformatter = VideoReformatter()

    def write_frame(self, pixels: Any, *, repeat: int = 1) -> None:
        self._validate_frame(pixels, repeat)
        rate = self.spec.frame_rate
        time_base = Fraction(rate.denominator, rate.numerator)
        stream = self._stream
        try:
            frame = av.VideoFrame.from_ndarray(pixels, format="rgba")
            if repeat > 1 and (frame.format.name != stream.pix_fmt or frame.width != stream.width
                               or frame.height != stream.height):
                frame = self._reformatter.reformat(
                    frame, width=stream.width, height=stream.height, format=stream.pix_fmt,
                    threads=stream.codec_context.thread_count)
            for _ in range(repeat):
                frame.pts = self._next_pts
                frame.time_base = time_base
                self._next_pts += 1
                for packet in stream.encode(frame):
                    self._container.mux(packet)
        except BaseException as error:
            raise self._operation_error("encode", error) from error


class _HeldFrameWriter(SceneFileWriter):
    def _create_segment_encoder(self, target: Any) -> VideoSegmentEncoder:
        if self.video_encoder is None:
            return super()._create_segment_encoder(target)
        return _HeldFrameEncoder(target=target, spec=self.video_encoder)


class HeldFrameScene(MovingCameraScene):
    """A scene whose held frames are converted for the encoder once (_HeldFrameEncoder)."""

    def __init__(self, camera_class: type = MovingCamera, **kwargs: Any) -> None:
        if kwargs.get("renderer") is None and config.renderer == RendererType.CAIRO:
            kwargs["renderer"] = CairoRenderer(
                file_writer_class=_HeldFrameWriter, camera_class=camera_class,
                skip_animations=kwargs.get("skip_animations", False))
        super().__init__(camera_class=camera_class, **kwargs)
