"""What is kept on disk (kept.Kept) is handed back whole or not at all, and graphviz's
layouts kept there are the ones it would lay out again, for the graphviz and fonts
that made them."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from backpropviz import graphviz, kept
from backpropviz.errors import DrawError
from backpropviz.html import render_html


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A folder of the test's own, as a new machine's."""
    monkeypatch.setenv("BACKPROPVIZ_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_what_is_kept_is_read_back_by_a_later_process_with_the_same_salt(cache):
    Kept = kept.Kept
    Kept("things-1", "salt", most=10, most_bytes=1000).put("key", b"made")
    assert Kept("things-1", "salt", most=10, most_bytes=1000).get("key") == b"made"
    assert Kept("things-1", "other salt", most=10, most_bytes=1000).get("key") is None
    assert Kept("things-2", "salt", most=10, most_bytes=1000).get("key") is None
    assert Kept("things-1", "salt", most=10, most_bytes=1000).get("another key") is None


def test_a_file_not_whole_is_none_and_nothing_is_kept_when_told(cache, monkeypatch):
    store = kept.Kept("things-1", "salt", most=10, most_bytes=1000)
    store.put("key", b"made once")
    (path,) = (cache / "things-1").iterdir()
    path.write_bytes(path.read_bytes()[:-5])  # cut short, as by a full disk
    assert store.get("key") is None
    store.put("key", b"made once")
    held = bytearray(path.read_bytes())
    held[2] ^= 1  # one bit changed
    path.write_bytes(bytes(held))
    assert store.get("key") is None
    monkeypatch.setenv("BACKPROPVIZ_CACHE", "")
    empty = kept.Kept("things-1", "salt", most=10, most_bytes=1000)
    empty.put("new", b"x")
    assert empty.get("new") is None and [path] == list(path.parent.iterdir())


@pytest.mark.parametrize("most, most_bytes, size", [(4, 10_000, 10), (100, 200, 60)])
def test_past_its_most_files_or_bytes_the_older_half_goes(cache, most, most_bytes, size):
    first = kept.Kept("things-1", "salt", most=most, most_bytes=most_bytes)
    for k in range(6):
        first.put(f"key {k}", bytes(size))
        os.utime(first.path(f"key {k}"), (1e9 + k, 1e9 + k))  # older first
    where = cache / "things-1"
    (where / "torn.part").write_bytes(b"left by a writer that died")
    os.utime(where / "torn.part", (1e9, 1e9))
    (where / "now.part").write_bytes(b"being written by another process")
    later = kept.Kept("things-1", "salt", most=most, most_bytes=most_bytes)
    later.put("key 6", bytes(size))
    names = {path.name for path in where.iterdir()}
    assert names == {first.path(f"key {k}").name for k in (3, 4, 5, 6)} | {"now.part"}


def programs_started(monkeypatch) -> list:
    """The commands started from now on (subprocess.Popen's first argument), as started."""
    started = []
    real = subprocess.Popen

    def counted(*args, **kwargs):
        started.append(args[0])
        return real(*args, **kwargs)
    monkeypatch.setattr(subprocess, "Popen", counted)
    return started


def test_a_layout_is_read_back_not_laid_out_again(cache, monkeypatch):
    source = "digraph { a -> b; b -> c; a -> c }\n"
    svg, json_ = graphviz.run_dot(source), graphviz.run_dot(source, "json")
    assert svg.startswith(b"<?xml") and json_.startswith(b"{")
    started = programs_started(monkeypatch)
    assert graphviz.run_dot(source) == svg and graphviz.run_dot(source, "json") == json_
    assert started == []
    # Another graph or another format is laid out; a neato drawing is not dot's.
    graphviz.run_dot(source.replace("a -> c", "c -> a"))
    graphviz.run_dot(source, "plain")
    placed = 'digraph { layout="neato"; a [pos="0,0"]; b [pos="90,0"]; a -> b }\n'
    graphviz.run_dot(placed)
    graphviz.run_dot(placed.replace('layout="neato"; ', ""))
    assert [command[0] for command in started] == ["dot", "dot", "neato", "dot"]
    # What dot refused is not kept: it is refused again, by dot.
    for _ in range(2):
        with pytest.raises(DrawError, match="dot failed"):
            graphviz.run_dot("digraph { a -> }\n")
    assert len(started) == 6


def test_another_graphviz_or_new_fonts_lay_out_again(tmp_path, cache, monkeypatch):
    """The key's salt names the program, graphviz's plugins and the fonts known: a
    graphviz upgraded (its plugins' config written again) or a font installed (the
    font cache written again) makes the same DOT a new key."""
    program = tmp_path / "graphviz" / "bin" / "dot"
    config = tmp_path / "graphviz" / "lib" / "x86_64-linux-gnu" / "graphviz" / "config6a"
    for path in (program, config):
        path.parent.mkdir(parents=True)
        path.write_text("made")
    key = "dot -Tsvg\ndigraph { a -> b }\n"
    before = graphviz._kept_for(str(program)).path(key)
    graphviz._kept_for.cache_clear()  # (as a later process)
    assert graphviz._kept_for(str(program)).path(key) == before
    os.utime(config, (time.time() + 5, time.time() + 5))
    graphviz._kept_for.cache_clear()
    upgraded = graphviz._kept_for(str(program)).path(key)
    assert upgraded != before
    fonts = tmp_path / "fonts"
    fonts.mkdir()
    monkeypatch.setattr(graphviz, "FONT_FOLDERS", (str(fonts),))
    graphviz._kept_for.cache_clear()
    known = graphviz._kept_for(str(program)).path(key)
    (fonts / "new.ttf").write_text("a font")
    os.utime(fonts, (time.time() + 5, time.time() + 5))  # (past the clock's coarse tick)
    graphviz._kept_for.cache_clear()
    assert graphviz._kept_for(str(program)).path(key) not in (before, upgraded, known)
    graphviz._kept_for.cache_clear()


def test_a_page_made_again_runs_no_dot_and_is_the_page_made_fresh(example, cache, tmp_path,
                                                                 monkeypatch):
    G = example("d2l_mlp")
    first = render_html(G, tmp_path / "first.html").read_bytes()
    assert len(list((cache / graphviz.KEPT_KIND).iterdir())) >= 3  # (its drafts)
    graphviz.layout_json.cache_clear()  # (as a later process)
    with monkeypatch.context() as patched:
        patched.setattr(subprocess, "Popen", lambda *a, **k: pytest.fail(f"ran {a[0]}"))
        again = render_html(G, tmp_path / "again.html").read_bytes()
    graphviz.layout_json.cache_clear()
    monkeypatch.setenv("BACKPROPVIZ_CACHE", "")
    fresh = render_html(G, tmp_path / "fresh.html").read_bytes()
    assert first == again == fresh


def test_a_store_made_before_the_cache_folder_changed_keeps_in_the_new_one(tmp_path,
                                                                          monkeypatch):
    # graphviz holds its store from the first layout of a process on: a test (or a
    # notebook) that points $BACKPROPVIZ_CACHE elsewhere later must not read the old
    # folder's layouts, nor write into it.
    source = "digraph { first -> held -> store }\n"
    monkeypatch.setenv("BACKPROPVIZ_CACHE", str(tmp_path / "before"))
    drawn = graphviz.run_dot(source)
    monkeypatch.setenv("BACKPROPVIZ_CACHE", str(tmp_path / "after"))
    started = programs_started(monkeypatch)
    assert graphviz.run_dot(source) == drawn and len(started) == 1
    assert graphviz.run_dot(source) == drawn and len(started) == 1
    assert len(list((tmp_path / "before" / graphviz.KEPT_KIND).iterdir())) == 1
    assert len(list((tmp_path / "after" / graphviz.KEPT_KIND).iterdir())) == 1
