"""The texts a clip made are kept on disk, and a later clip reads them back unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from backpropviz.animate import kept_texts, mobjects
from backpropviz.animate.mobjects import TextStore
from backpropviz.names import Heading


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A store with its own folder on disk and nothing made in this process yet; the
    next ``fresh()`` is as a new process's."""
    monkeypatch.setenv("BACKPROPVIZ_CACHE", str(tmp_path / "cache"))

    def store() -> TextStore:
        mobjects._MADE.clear()
        return TextStore()
    yield store
    mobjects._MADE.clear()


def never_made(monkeypatch) -> None:
    """From here on, making a text (Pango, or LaTeX) fails the test."""
    def refused(*args, **kwargs):
        raise AssertionError("a text was made again, not read back")
    for name in ("Text", "MarkupText", "MathTex"):
        monkeypatch.setattr(mobjects, name, refused)


def points(mobject) -> list[np.ndarray]:
    return [part.points for part in mobject.get_family()]


def test_a_later_process_reads_back_what_an_earlier_made(fresh, monkeypatch):
    first = fresh()
    made = [first.text("0.3052", 0.25, "#1f4e9c"), first.text("∂L/∂W1", 0.3, "#000000",
                                                                   serif=True),
            first.heading(Heading("W1", True), 0.3, "#000000")]
    files = list(kept_texts.folder().iterdir())
    assert len(files) == 3 and all(file.suffix == ".kept" for file in files)
    never_made(monkeypatch)
    later = fresh()
    again = [later.text("0.3052", 0.25, "#1f4e9c"), later.text("∂L/∂W1", 0.3, "#000000",
                                                                  serif=True),
             later.heading(Heading("W1", True), 0.3, "#000000")]
    for one, other in zip(made, again, strict=True):
        assert type(one) is type(other) and one.em == other.em
        for a, b in zip(points(one), points(other), strict=True):
            np.testing.assert_array_equal(a, b)
        assert one.get_color() == other.get_color()
    assert again[2].plain == "W1"


def test_another_size_colour_or_face_is_another_text(fresh, monkeypatch):
    first = fresh()
    first.text("0.5", 0.25, "#000000")
    later = fresh()
    calls = []
    real = mobjects.QuickText

    def counted(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)
    monkeypatch.setattr(mobjects, "QuickText", counted)
    later.text("0.5", 0.3, "#000000")
    later.text("0.5", 0.25, "#ffffff")
    later.text("0.5", 0.25, "#000000", serif=True)
    assert len(calls) == 3
    later.text("0.5", 0.25, "#000000")  # the first one's, from disk
    assert len(calls) == 3


def test_a_torn_file_is_made_again_and_none_kept_when_told(fresh, monkeypatch, tmp_path):
    fresh().text("1.25", 0.25, "#000000")
    (kept,) = kept_texts.folder().iterdir()
    kept.write_bytes(kept.read_bytes()[:40])  # cut short, as by a full disk
    later = fresh()
    assert len(later.text("1.25", 0.25, "#000000").get_family()) > 1  # made anew
    assert len(kept.read_bytes()) > 40  # and kept whole again
    monkeypatch.setenv("BACKPROPVIZ_CACHE", "")
    mobjects._MADE.clear()
    TextStore().text("7.5", 0.25, "#000000")
    assert kept_texts.folder() is None and [kept] == list(kept.parent.iterdir())

