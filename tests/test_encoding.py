"""A held frame is converted for the encoder once, and the clip is manim's own, byte for
byte."""

from __future__ import annotations

import tempfile
from pathlib import Path

import manim

from backpropviz.animate import encoding
from backpropviz.animate.render import encoder_options


class Held(encoding.HeldFrameScene):
    def construct(self):
        square = manim.Square(color=manim.BLUE, fill_opacity=0.5)
        self.play(manim.FadeIn(square), run_time=0.5)
        self.wait(1)  # (a still frame, held)
        self.play(square.animate.shift(manim.RIGHT), run_time=0.5)
        self.wait(0.5)


class Manims(manim.MovingCameraScene):
    construct = Held.construct


def rendered(scene_class) -> bytes:
    with tempfile.TemporaryDirectory() as media, manim.tempconfig(
            {"media_dir": media, "quality": "low_quality", "disable_caching": True,
             "progress_bar": "none", "verbosity": "WARNING", "output_file": "clip",
             # (the clip's own options: x264 kept off its AVX-512 code, which on this
             # machine encodes the same frames differently now and then)
             "video_encoder_options": encoder_options(".mp4")}):
        scene = scene_class()
        scene.render()
        return Path(scene.renderer.file_writer.movie_file_path).read_bytes()


def test_a_held_frame_is_converted_once_and_the_clip_is_manims(monkeypatch):
    held, converted = [], []
    real_write = encoding._HeldFrameEncoder.write_frame
    real_reformatter = encoding.VideoReformatter

    def counted(self, pixels, *, repeat=1):
        held.append(repeat)
        return real_write(self, pixels, repeat=repeat)

    class Counting:
        def __init__(self):
            self.real = real_reformatter()

        def reformat(self, frame, **options):
            converted.append(frame)
            return self.real.reformat(frame, **options)
    monkeypatch.setattr(encoding._HeldFrameEncoder, "write_frame", counted)
    monkeypatch.setattr(encoding, "VideoReformatter", Counting)
    ours = rendered(Held)
    assert max(held) >= 15  # (the second's wait: one frame, held)
    assert len(converted) == sum(repeat > 1 for repeat in held)  # (once, however long held)
    monkeypatch.undo()
    assert ours == rendered(Manims)
