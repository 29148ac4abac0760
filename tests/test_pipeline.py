"""One pipeline: every output through backpropviz.output with one Options type."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import backpropviz
from backpropviz import Options, Value, cli, render, write, write_steps
from backpropviz.errors import Note, UsageError
from backpropviz.ir import from_node_link
from backpropviz.options import FORMATS, KINDS, format_of
from backpropviz.script import as_graph
from backpropviz.style import THEMES


def neuron() -> Value:
    """A small graph with a fork: L = (w·x + b)·(w·x + b)."""
    w, x, b = Value(3.0, label="w"), Value(-2.0, label="x"), Value(1.0, label="b")
    y = w * x + b
    L = y * y
    L.label = "L"
    L.backward()
    return L


def test_write_picks_the_format_from_the_extension_and_returns_the_path(tmp_path):
    L = neuron()
    svg = write(L, tmp_path / "fig.svg", theme="dark")
    assert svg == tmp_path / "fig.svg"
    text = svg.read_text()
    assert text.lstrip().startswith(("<?xml", "<svg", "<!DOCTYPE"))
    assert THEMES["dark"].background in text  # the theme reached the writer
    dot = write(L, tmp_path / "fig.dot").read_text()
    assert dot.startswith("digraph backprop {")
    png = write(L, tmp_path / "fig.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_export_holds_the_engine_numbers(tmp_path):
    L = neuron()
    data = json.loads(write(L, tmp_path / "g.json").read_text())
    G = from_node_link(data)
    by_label = {attrs["label"]: attrs for _, attrs in G.nodes(data=True)
                if attrs.get("kind") == "value" and attrs.get("label")}
    # y = 3·(−2) + 1 = −5, L = 25; ∂L/∂y = 2y = −10, ∂L/∂w = −10·x = 20, ∂L/∂x = −30
    assert by_label["L"]["data"] == 25.0
    assert by_label["w"]["grad"] == 20.0
    assert by_label["x"]["grad"] == -30.0
    assert by_label["b"]["grad"] == -10.0


def test_render_gives_the_bytes_write_writes(tmp_path):
    L = neuron()
    assert render(L, "dot", rankdir="TB") == write(L, tmp_path / "a.dot", rankdir="TB").read_bytes()
    assert b'rankdir="TB"' in render(L, "dot", rankdir="TB")


def test_options_are_checked_when_made():
    with pytest.raises(UsageError, match=r"unknown theme: 'sepia' \(must be one of \['dark'"):
        Options(theme="sepia")
    with pytest.raises(UsageError, match="precision must be an int of significant digits, 1 to 17"):
        Options(precision=0)
    with pytest.raises(UsageError, match=r"^speed must be 0.01 to 100, got 1e\+300$"):
        Options(speed=1e300)  # (manim's wait of 0 s)
    with pytest.raises(UsageError, match="WIDTHxHEIGHT"):
        Options(fit="wide")
    assert Options(fit="1920x1080").fit == (1920, 1080)
    with pytest.raises(UsageError, match="unknown option: 'colour'"):
        Options().replace(colour="red")


@pytest.mark.parametrize(("fmt", "options", "message"), [
    ("html", {"fit": "1920x1080"}, "--fit lays out figures"),
    ("svg", {"quality": "h"}, "--quality: for videos only"),
    ("mp4", {"theme": "transparent-dark"},
     "--theme transparent-dark needs a video format with an alpha channel (.webm, .mov), "
     "not .mp4"),
    ("gif", {"theme": "transparent"}, "--theme transparent needs a video format"),
    ("html", {"symbolic": True}, "--symbolic draws a figure without numbers"),
])
def test_options_that_do_not_go_with_a_format_are_refused(fmt, options, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        Options(**options).check(fmt)


def test_the_format_and_the_extension_must_agree():
    assert format_of("fig.PDF") == "pdf"
    assert format_of("fig", "png") == "png"
    with pytest.raises(UsageError, match=r"is a \.png file but --format is svg"):
        format_of("fig.png", "svg")
    with pytest.raises(UsageError, match="without an extension"):
        format_of("fig")
    assert set(FORMATS) == {fmt for formats in KINDS.values() for fmt in formats}


def test_write_steps_draws_one_picture_per_state_of_the_backward_pass(tmp_path):
    L = neuron()
    paths = write_steps(L, tmp_path / "steps")
    G = as_graph(L)
    assert len(paths) == len(G.graph["backward_order"]) + 1
    assert [p.name for p in paths] == [f"step-{k:03d}.svg" for k in range(len(paths))]
    assert all(p.read_text().count("<svg") == 1 for p in paths)


def test_a_figure_too_small_for_its_frame_is_drawn_with_a_note(tmp_path):
    L = neuron()
    with pytest.warns(Note, match="px tall"):
        data = render(L, "svg", fit="160x90")
    assert data.count(b'width="160px"') == 1


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "lecture.py"
    path.write_text("from backpropviz import Value\n" + body)
    return path


def test_the_cli_prints_the_note_and_succeeds(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = _script(tmp_path, "a = Value(2.0)\nb = a * a + a\n")
    assert cli.main(["render", str(script), "-o", "small.svg", "--fit", "160x90"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("backpropviz: note: at 160x90 the numbers are")
    assert (tmp_path / "small.svg").exists()


def test_usage_errors_are_one_line_and_status_2_before_the_script_runs(tmp_path, capsys):
    marker = tmp_path / "ran"
    script = _script(tmp_path, f"open({str(marker)!r}, 'w').close()\nL = Value(1.0) * 2\n")
    cases = [
        (["-o", str(tmp_path / "clip.mp4"), "--theme", "transparent-dark"],
         "needs a video format with an alpha channel"),
        (["-o", str(tmp_path / "page.html"), "--fit", "1920x1080"], "--fit lays out figures"),
        (["-o", str(tmp_path / "x.png"), "--format", "svg"], "is a .png file but --format"),
        (["-o", str(tmp_path / "x.svg"), "--theme", "sepia"], "invalid choice: 'sepia'"),
        (["-o", str(tmp_path / "x.svg"), "--precision", "0"], "must be positive, got 0"),
    ]
    for extra, message in cases:
        assert cli.main(["render", str(script), *extra]) == 2, extra
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("backpropviz: error: "), err
        assert message in err
    assert not marker.exists()
    assert not list(tmp_path.glob("x.*")) and not list(tmp_path.glob("clip.*"))


def test_version_answers_without_loading_the_package_and_help_without_renderers():
    probe = ("import sys\nfrom backpropviz.cli import main\n"
             "status = main([{arg!r}])\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('numpy', 'networkx', 'manim', 'torch') or m in "
             "('backpropviz.diagram', 'backpropviz.dot', 'backpropviz.html', "
             "'backpropviz.animate.sweep')))")
    def loaded(arg: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", probe.format(arg=arg)],
                              capture_output=True, text=True, check=True, timeout=60)
        return eval(done.stdout.strip().splitlines()[-1])  # a printed list of names
    assert loaded("--version") == []
    assert loaded("--help") == []


def test_the_public_api_is_small_and_old_names_still_work_with_a_warning():
    assert len(backpropviz.__all__) <= 16
    for name in backpropviz.__all__:
        assert getattr(backpropviz, name) is not None
    with pytest.warns(DeprecationWarning, match="import it from backpropviz.ir"):
        to_networkx = backpropviz.to_networkx
    from backpropviz.ir import to_networkx as owned
    assert to_networkx is owned
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert backpropviz.write is write  # a public name does not warn
    with pytest.raises(AttributeError):
        backpropviz.no_such_name  # noqa: B018


def test_the_page_takes_the_figures_options_for_the_picture_beside_it():
    from backpropviz.html import step_through
    from backpropviz.output import show

    w = Value(3.0, label="w")
    L = w * 7.0  # the constant 7 gets gradient 3 from the engine
    L.backward()
    page = show(L, format="html", theme="dark")
    assert "<title>" in page.html and THEMES["dark"].background in page.html
    shown = step_through(L, show_constants=True).diagram.source
    hidden = step_through(L).diagram.source
    assert shown.count(">3<") == hidden.count(">3<") + 1  # the constant's gradient, 3


def test_the_text_form_is_written_for_a_txt_output(tmp_path, capsys):
    script = _script(tmp_path, "a, b = Value(2.0), Value(-3.0)\nL = a * b + b\nL.backward()\n")
    out = tmp_path / "graph.txt"
    assert cli.main(["render", str(script), "-o", str(out)]) == 0
    text = out.read_text()
    # L = a·b + b = −6 − 3 = −9; ∂L/∂a = b = −3, ∂L/∂b = a + 1 = 3
    numbers = {match[0]: (float(match[1]), float(match[2])) for match in
               re.findall(r"^(\w+) = .*?data (\S+) +grad (\S+)", text, flags=re.M)}
    assert numbers["L"] == (-9.0, 1.0)
    assert numbers["a"] == (2.0, -3.0)
    assert numbers["b"] == (-3.0, 3.0)
    assert text == render(as_graph_of(script), "txt").decode()


def as_graph_of(script: Path):
    from backpropviz.script import graph_of_script

    return graph_of_script(script, quiet=True)


@pytest.mark.parametrize(("path", "options", "message"), [
    ("page.html", {"fit": "1920x1080"}, "--fit lays out figures"),
    ("g.json", {"fit": "1920x1080"}, "--fit lays out figures"),
    ("g.txt", {"symbolic": True}, "--symbolic draws a figure without numbers"),
    ("page.html", {"symbolic": True}, "--symbolic draws a figure without numbers"),
])
def test_python_refuses_what_the_command_line_refuses(tmp_path, path, options, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        write(neuron(), tmp_path / path, **options)
    assert not (tmp_path / path).exists()


def test_write_steps_takes_a_folder_named_by_a_string(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = write_steps(neuron(), "frames/")
    assert paths[0] == Path("frames/step-000.svg") and paths[0].is_file()


ARGUED = """
import argparse
from backpropviz import Value
def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--w", type=float, default=0.5)
    w = Value(parser.parse_args().w, label="w")
    if w.data != 3:
        raise SystemExit(5)  # run without its arguments
    loss = (w * 2.0).tanh()
    loss.backward()
if __name__ == "__main__":
    main()
"""


def test_check_and_memory_give_the_script_its_arguments(tmp_path, capsys):
    script = tmp_path / "argued.py"
    script.write_text(ARGUED)
    memory = tmp_path / "memory.json"
    assert cli.main(["memory", str(script), "-o", str(memory), "--", "--w", "3"]) == 0
    assert json.loads(memory.read_text())
    assert cli.main(["check", str(script), "--", "--w", "3"]) == 0
    assert "gradients match the reference" in capsys.readouterr().out
    assert cli.main(["check", str(script)]) == 2
    assert "exited with status 5" in capsys.readouterr().err
    out = tmp_path / "w3.txt"
    assert cli.main(["render", str(script), "-o", str(out), "--", "--w", "3"]) == 0
    assert re.search(r"^w = input +data 3 ", out.read_text(), flags=re.M)


def test_several_scripts_go_into_a_folder_not_a_file(tmp_path, capsys):
    one, two = tmp_path / "one.py", tmp_path / "two.py"
    for path in (one, two):
        path.write_text("from backpropviz import Value\nL = Value(1.0) * 2\n")
    assert cli.main(["render", str(one), str(two), "-o", str(tmp_path / "both.svg")]) == 2
    assert "several scripts cannot all go to" in capsys.readouterr().err
    assert not (tmp_path / "both.svg").exists()


def test_check_says_a_pytorch_script_is_the_reference_not_an_engine(tmp_path, capsys):
    pytest.importorskip("torch")
    script = tmp_path / "lecture.py"
    script.write_text("import torch\nw = torch.tensor(2.0, requires_grad=True)\n"
                      "loss = (w * w - 1) ** 2\nloss.backward()\n")
    assert cli.main(["check", str(script)]) == 2
    err = capsys.readouterr().err
    assert "computes with PyTorch, whose gradients are the reference" in err
    assert err.count("\n") == 1
