"""The command line: formats, roots, errors, no partial files.

Run by cli.main in this process as the entry point runs it (tests/in_process.py), but for
what only a process of its own shows: the installed entry point, the script's own
traceback, an interrupt's exit status, a closed pipe, a graph too large to wait for."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from backpropviz import cli
from backpropviz import script as script_front_end
from backpropviz.ir import from_graphml, from_node_link, to_networkx, to_node_link, validate
from tests.in_process import run_cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ENGINE_EXAMPLES = ["add_mul", "d2l_mlp", "d2l_mlp_scalar", "d2l_objective", "fork",
                   "scalar_neuron"]


def _entry_point() -> str:
    beside_python = Path(sys.executable).parent / "backpropviz"
    found = str(beside_python) if beside_python.exists() else shutil.which("backpropviz")
    if found is None:
        pytest.fail("the backpropviz entry point is not installed (pip install -e .)")
    return found


BIN = _entry_point()


def run(*args: str | Path, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, *map(str, args)], cwd=cwd, capture_output=True, env=env,
                          timeout=120, check=False)


def ok(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    """``backpropviz render ARGS`` (in this process), which must succeed."""
    done = run_cli("render", *args, cwd=cwd)
    assert done.returncode == 0, done.stderr.decode()
    return done


def fails(*args: str | Path, cwd: Path, status: int = 1, env: dict | None = None,
          command=run_cli) -> str:
    """``backpropviz render ARGS`` (in this process, or by ``command=run``, the entry
    point), which must fail cleanly; return its one error line."""
    done = command("render", *args, cwd=cwd, env=env)
    stderr = done.stderr.decode()
    assert done.returncode == status, stderr
    last = stderr.splitlines()[-1]
    assert last.startswith("backpropviz: error: "), stderr
    return last


def script(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


@pytest.fixture(scope="module")
def reference_graph(example_names):
    """``reference_graph("d2l_mlp", "L")``: to_networkx in this process of the
    example's named roots, as the CLI should write it."""
    def build(example: str, *roots: str):
        namespace = example_names(example)
        return to_networkx(*(namespace[root] for root in roots), names=namespace)
    return build


def written_graph(path: Path):
    G = from_node_link(json.loads(path.read_text()))
    validate(G)
    return G


def files(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir()}


# ---------------------------------------------------------------- formats


@pytest.mark.parametrize("example", ENGINE_EXAMPLES)
def test_every_example_draws_to_the_default_svg(example, tmp_path):
    ok(EXAMPLES / f"{example}.py", cwd=tmp_path)
    assert files(tmp_path) == {f"{example}.svg"}  # <stem>.svg in the cwd, no temp file left
    svg = (tmp_path / f"{example}.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and svg.rstrip().endswith("</svg>")


@pytest.mark.parametrize(("fmt", "magic"), [("png", b"\x89PNG\r\n\x1a\n"), ("pdf", b"%PDF-"),
                                            ("dot", b"digraph")])
def test_the_extension_picks_the_format(fmt, magic, tmp_path):
    ok(EXAMPLES / "d2l_mlp.py", "-o", f"fig.{fmt}", cwd=tmp_path)
    assert (tmp_path / f"fig.{fmt}").read_bytes().startswith(magic)
    assert files(tmp_path) == {f"fig.{fmt}"}


def test_a_picture_asked_for_in_another_format_of_pixels_is_told_to_be_a_png(tmp_path):
    """A lecturer's slide.jpg: refused before the script runs, with the name to use."""
    done = run_cli("render", EXAMPLES / "add_mul.py", "-o", "slide.jpg", cwd=tmp_path,
                   text=True)
    assert done.returncode == 2
    assert done.stderr.strip().endswith("for a picture in pixels, name it slide.png")
    assert done.stderr.count("\n") == 1 and files(tmp_path) == set()


def test_json_is_the_engines_graph_with_its_numbers(reference_graph, tmp_path):
    ok(EXAMPLES / "d2l_mlp.py", "-o", "graph.json", cwd=tmp_path)
    written = json.loads((tmp_path / "graph.json").read_text())
    expected = json.loads(json.dumps(to_node_link(reference_graph("d2l_mlp", "L"))))
    # The one difference: the script's y = 0 names the constant of o - y.
    (constant,) = [node for node in expected["nodes"] if node.get("role") == "const"
                   and node["data"] == 0.0]
    constant["label"] = "y"
    assert written == expected
    G = written_graph(tmp_path / "graph.json")
    grads = {G.nodes[v]["label"]: G.nodes[v]["grad"] for v in G if G.nodes[v]["kind"] == "value"}
    assert grads["W1"] == [[0.0, 0.0], [2.0, 4.0]]  # the seed's dead top row
    assert grads["h"] == [-4.0, 2.0]


def test_graphml_round_trips_to_the_engines_graph(reference_graph, tmp_path):
    ok(EXAMPLES / "fork.py", "-o", "graph.graphml", cwd=tmp_path)
    G = from_graphml((tmp_path / "graph.graphml").read_text())
    validate(G)
    H = reference_graph("fork", "c")
    assert dict(G.nodes(data=True)) == dict(H.nodes(data=True))
    assert sorted(G.edges(keys=True, data=True)) == sorted(H.edges(keys=True, data=True))


@pytest.mark.parametrize("args", [["-o", "fig.svg", "--fit", "1280x720"], ["-o", "page.html"],
                                  ["-o", "graph.json"], ["-o", "fig.png", "--steps", "steps"],
                                  ["-o", "-"], ["--iteration", "2", "-o", "it.svg"]])
def test_the_graph_is_validated_once_where_it_is_built(args, tmp_path, monkeypatch):
    from backpropviz import schema

    given, validate = [], schema.validate
    for module in (schema, script_front_end):
        monkeypatch.setattr(module, "validate", lambda G: given.append(G) or validate(G))
    example = "training_loop" if "--iteration" in args else "scalar_neuron"  # (a fold)
    ok(EXAMPLES / f"{example}.py", *args, cwd=tmp_path)
    assert len(given) == 1
    given.clear()
    done = run_cli("memory", EXAMPLES / "add_mul.py", "-o", "memory.svg", cwd=tmp_path)
    assert done.returncode == 0 and len(given) == 1


def test_format_option_overrides_the_extension_and_names_the_default(tmp_path):
    ok(EXAMPLES / "add_mul.py", "-o", "graph.out", "--format", "json", cwd=tmp_path)
    written_graph(tmp_path / "graph.out")
    ok(EXAMPLES / "add_mul.py", "--format", "dot", cwd=tmp_path)
    assert (tmp_path / "add_mul.dot").read_text().startswith("digraph")


def test_dash_writes_the_picture_alone_to_stdout(tmp_path):
    done = run("render", EXAMPLES / "add_mul.py", "-o", "-", cwd=tmp_path)  # a real stdout
    assert done.returncode == 0, done.stderr.decode()
    ok(EXAMPLES / "add_mul.py", "-o", "file.svg", cwd=tmp_path)
    assert done.stdout == (tmp_path / "file.svg").read_bytes()
    assert b"de/da = -3.0" in done.stderr  # the script's own print moved to stderr
    assert files(tmp_path) == {"file.svg"}
    as_json = ok(EXAMPLES / "add_mul.py", "-o", "-", "--format", "json", cwd=tmp_path)
    assert json.loads(as_json.stdout)["graph"]["roots"]


def test_options_reach_the_drawing(tmp_path):
    ok(EXAMPLES / "fork.py", "-o", "lr.dot", cwd=tmp_path)
    ok(EXAMPLES / "fork.py", "-o", "bt.dot", "--rankdir", "BT", "--theme", "dark",
       "--precision", "2", cwd=tmp_path)
    assert 'rankdir="LR"' in (tmp_path / "lr.dot").read_text()
    dark = (tmp_path / "bt.dot").read_text()
    assert 'rankdir="BT"' in dark and "theme-dark" in dark


def test_two_runs_give_byte_identical_svg(tmp_path):
    ok(EXAMPLES / "d2l_objective.py", "-o", "one.svg", cwd=tmp_path)
    ok(EXAMPLES / "d2l_objective.py", "-o", "two.svg", cwd=tmp_path)
    assert (tmp_path / "one.svg").read_bytes() == (tmp_path / "two.svg").read_bytes()


def test_drawing_an_svg_imports_neither_manim_nor_torch(tmp_path):
    code = ("import sys; from backpropviz.cli import main; "
            f"status = main(['render', {str(EXAMPLES / 'd2l_mlp.py')!r}, '-o', 'x.svg']); "
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('manim', 'torch')); "
            "print(status, heavy)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=True)
    assert done.stdout.splitlines()[-1] == "0 []"
    assert (tmp_path / "x.svg").exists()


# ---------------------------------------------------------------- roots and backward


def test_roots_by_name(tmp_path):
    ok(EXAMPLES / "add_mul.py", "d", "-o", "d.json", cwd=tmp_path)
    G = written_graph(tmp_path / "d.json")
    assert [G.nodes[v]["label"] for v in G.graph["roots"]] == ["d"]
    assert "e" not in {G.nodes[v].get("label") for v in G}
    ok(EXAMPLES / "d2l_objective.py", "L", "s", "-o", "ls.json", cwd=tmp_path)
    G = written_graph(tmp_path / "ls.json")
    assert [G.nodes[v]["label"] for v in G.graph["roots"]] == ["L", "s"]


def test_outputs_sharing_a_graph_are_drawn_together(tmp_path):
    script(tmp_path, "pair.py", """
        from backpropviz import Value
        a = Value(2.0)
        b = a * 3
        c = a + 1
        """)
    ok("pair.py", "-o", "pair.json", cwd=tmp_path)
    G = written_graph(tmp_path / "pair.json")
    assert [G.nodes[v]["label"] for v in G.graph["roots"]] == ["b", "c"]
    # Backward ran from each root: d(b + c)/da = 3 + 1.
    a = next(v for v in G if G.nodes[v]["label"] == "a")
    assert G.nodes[a]["grad"] == 4.0


def test_backward_runs_when_the_script_did_not(tmp_path):
    script(tmp_path, "forward.py", """
        from backpropviz import Value
        a, b, c = Value(2.0), Value(1.0), Value(-3.0)
        d = a + b
        e = d * c
        """)
    ok("forward.py", "-o", "auto.json", cwd=tmp_path)
    ok(EXAMPLES / "add_mul.py", "-o", "book.json", cwd=tmp_path)
    auto, book = written_graph(tmp_path / "auto.json"), written_graph(tmp_path / "book.json")
    assert auto.graph["backward_order"] and dict(auto.nodes(data=True)) == dict(
        book.nodes(data=True))


def test_no_backward_draws_the_forward_pass_only(reference_graph, tmp_path):
    ok(EXAMPLES / "d2l_mlp.py", "--no-backward", "-o", "fwd.json", cwd=tmp_path)
    G = written_graph(tmp_path / "fwd.json")
    assert all(G.nodes[v].get("grad") is None for v in G)
    assert G.graph["backward_order"] == []
    reference = reference_graph("d2l_mlp", "L")
    assert [G.nodes[v].get("data") for v in G] == [reference.nodes[v].get("data")
                                                   for v in reference]
    ok(EXAMPLES / "d2l_mlp.py", "--no-backward", "-o", "fwd.svg", cwd=tmp_path)
    # A non-scalar root is fine when no backward pass is wanted.
    script(tmp_path, "vector.py", """
        from backpropviz import Tensor
        x = Tensor([1.0, 2.0])
        y = x * 3
        """)
    ok("vector.py", "--no-backward", "-o", "vector.svg", cwd=tmp_path)


def test_steps_writes_one_svg_per_backward_step(reference_graph, tmp_path):
    ok(EXAMPLES / "add_mul.py", "--steps", "frames", cwd=tmp_path)
    assert files(tmp_path) == {"frames"}  # with --steps and no -o, only the steps
    names = sorted(files(tmp_path / "frames"))
    ops = len(reference_graph("add_mul", "e").graph["backward_order"])
    assert names == [f"step-{k:03d}.svg" for k in range(ops + 1)]
    assert all((tmp_path / "frames" / n).read_text().rstrip().endswith("</svg>") for n in names)
    ok(EXAMPLES / "add_mul.py", "--steps", "frames", "-o", "whole.svg", cwd=tmp_path)
    assert files(tmp_path) == {"frames", "whole.svg"}
    assert sorted(files(tmp_path / "frames")) == names
    # A shorter graph into the same folder leaves no frames of the longer one.
    (tmp_path / "frames" / "notes.txt").write_text("mine")
    ok(EXAMPLES / "d2l_mlp.py", "--steps", "frames", cwd=tmp_path)
    assert len(files(tmp_path / "frames")) > len(names) + 1
    ok(EXAMPLES / "add_mul.py", "--steps", "frames", cwd=tmp_path)
    assert sorted(files(tmp_path / "frames")) == sorted([*names, "notes.txt"])


def test_steps_are_written_in_the_format_asked_for(tmp_path):
    ok(EXAMPLES / "add_mul.py", "--steps", "frames", "--format", "png", cwd=tmp_path)
    written = sorted((tmp_path / "frames").iterdir())
    assert written and all(path.suffix == ".png" for path in written)
    assert all(path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") for path in written)
    # A page asked for by -o leaves the steps SVGs: a page is not one picture per step.
    ok(EXAMPLES / "add_mul.py", "--steps", "pages", "-o", "p.html", cwd=tmp_path)
    assert {path.suffix for path in (tmp_path / "pages").iterdir()} == {".svg"}


def test_video_problems_are_found_before_the_script_runs(tmp_path):
    marker = tmp_path / "ran"
    script(tmp_path, "s.py", f"open({str(marker)!r}, 'w').close()\n"
           "from backpropviz import Value\na = Value(2.0)\nb = a * a\n")
    err = fails("s.py", "--steps", "st", "-o", "v.mp4", "--theme", "transparent",
                cwd=tmp_path, status=2)
    assert "--theme transparent needs a video format with an alpha channel" in err
    assert not marker.exists() and files(tmp_path) == {"s.py"}


def test_unreadable_script_and_closed_pipe_are_one_line(tmp_path):
    err = fails("/proc/self/mem", cwd=tmp_path)
    assert err.startswith("backpropviz: error: cannot read /proc/self/mem")
    done = subprocess.run(f"{shlex.quote(BIN)} render {EXAMPLES / 'd2l_objective.py'} "
                          "-o - --format png | true", shell=True, cwd=tmp_path,
                          capture_output=True, text=True)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_the_script_runs_as_python_would_run_it(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    script(folder, "helper.py", "SCALE = 5.0\n")
    script(folder, "main.py", """
        import sys
        from helper import SCALE  # the script's folder is on sys.path
        from backpropviz import Value
        assert __name__ == "__main__"
        print("argv:", sys.argv)
        x = Value(2.0)
        y = x * SCALE
        """)
    # In a process of its own: the script's helper module is imported afresh, as by python.
    done = run("render", Path("project") / "main.py", "-o", "out.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == f"argv: [{str(Path('project') / 'main.py')!r}]"
    G = written_graph(tmp_path / "out.json")
    assert sorted(G.nodes[v]["data"] for v in G if G.nodes[v]["kind"] == "value") == [
        2.0, 5.0, 10.0]


def test_version_and_help(tmp_path):
    from backpropviz import __version__

    done = run("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.decode().strip() == f"backpropviz {__version__}"
    text = run("render", "--help", cwd=tmp_path).stdout.decode()
    for option in ("--output", "--format", "--rankdir", "--theme", "--precision", "--steps",
                   "--no-backward", "--max-nodes", "--quality", "--phase", "--speed"):
        assert option in text
    module = subprocess.run([sys.executable, "-m", "backpropviz", "--version"],
                            capture_output=True, text=True, check=True, timeout=60)
    assert module.stdout.strip() == f"backpropviz {__version__}"


# ---------------------------------------------------------------- errors


def test_missing_script(tmp_path):
    assert fails("nope.py", cwd=tmp_path) == "backpropviz: error: no such script: nope.py"
    assert files(tmp_path) == set()


def test_a_saved_graph_given_as_the_script_is_one_clear_error(tmp_path):
    (tmp_path / "graph.json").write_text('{"nodes": [')  # (run as Python: a SyntaxError)
    assert fails("graph.json", "-o", "x.svg", cwd=tmp_path) == (
        "backpropviz: error: graph.json is a saved graph, not a script: the command runs a "
        "Python script; draw a saved graph in Python (backpropviz.ir.from_node_link or "
        "from_graphml, then draw)")
    assert files(tmp_path) == {"graph.json"}


def test_exception_in_the_script_shows_its_own_traceback(tmp_path):
    script(tmp_path, "bad.py", """
        from backpropviz import Value
        def f(x):
            return x / undefined_name
        y = f(Value(1.0))
        """)
    done = run("render", "bad.py", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.decode().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1] == '  File "bad.py", line 5, in <module>'  # our own frames are trimmed
    assert "cli.py" not in done.stderr.decode() and "runpy" not in done.stderr.decode()
    assert lines[-2] == "NameError: name 'undefined_name' is not defined"
    assert lines[-1] == ("backpropviz: error: bad.py failed with NameError "
                         "(its traceback is above)")
    assert files(tmp_path) == {"bad.py"}


@pytest.mark.parametrize(("line", "said"), [
    ("b = 2 - a", "a number on the left of - (int - Value) calls Value.__rsub__"),
    ("b = sum([a, a])", "a number on the left of + (int + Value; sum() starts from 0) calls "
                        "Value.__radd__"),
    ("b = 0.5 * a", "a number on the left of * (float * Value) calls Value.__rmul__")])
def test_a_value_class_without_a_reflected_method_is_told_which_one(tmp_path, line, said):
    # (a student's class has __sub__, __add__, __mul__ but not their reflections)
    script(tmp_path, "student.py", f"""
        class Value:
            def __init__(self, data):
                self.data = data
            def __add__(self, other):
                return Value(self.data + getattr(other, "data", other))
            def __sub__(self, other):
                return Value(self.data - getattr(other, "data", other))
            def __mul__(self, other):
                return Value(self.data * getattr(other, "data", other))
        a = Value(3.0)
        {line}
        """)
    done = run("render", "student.py", cwd=tmp_path)
    assert done.returncode == 1
    last = done.stderr.decode().splitlines()[-1]
    assert last.startswith("backpropviz: error: student.py failed with TypeError (its "
                           "traceback is above); ")
    assert said in last and last.endswith("give it one, as micrograd's Value does")
    assert files(tmp_path) == {"student.py"}


def test_syntax_error_in_the_script(tmp_path):
    script(tmp_path, "syntax.py", "x = (\n")
    done = run("render", "syntax.py", cwd=tmp_path)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 1
    assert lines[0] == '  File "syntax.py", line 1'
    assert lines[-2].startswith("SyntaxError: ")
    assert lines[-1].startswith("backpropviz: error: syntax.py failed with SyntaxError")


@pytest.mark.parametrize("source", ["x = 1\n", "from backpropviz import Value\nexit(3)\n"])
def test_no_graph_found(source, tmp_path):
    script(tmp_path, "empty.py", source)
    message = fails("empty.py", cwd=tmp_path)
    assert "no graph" in message
    assert files(tmp_path) == {"empty.py"}


def test_values_never_combined_are_no_graph(tmp_path):
    script(tmp_path, "leaves.py", "from backpropviz import Value\na, b = Value(1.0), Value(2.0)\n")
    assert fails("leaves.py", cwd=tmp_path) == ("backpropviz: error: no graph found: the "
                                                "script's values (a, b) were not combined by "
                                                "any operation")


def test_separate_graphs_are_listed(tmp_path):
    script(tmp_path, "two.py", """
        from backpropviz import Value
        a = Value(1.0); b = a * 2
        c = Value(3.0); d = c + 1
        """)
    message = fails("two.py", cwd=tmp_path)
    assert "separate graphs: b, d" in message
    ok("two.py", "d", "-o", "d.json", cwd=tmp_path)


def test_unknown_root_lists_the_names(tmp_path):
    message = fails(EXAMPLES / "add_mul.py", "f", cwd=tmp_path)
    assert message == ("backpropviz: error: unknown root 'f' (the script's values are: "
                       "a, b, c, d, e)")


def test_non_scalar_root_without_gradients(tmp_path):
    script(tmp_path, "vector.py", """
        from backpropviz import Tensor
        x = Tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        """)
    message = fails("vector.py", cwd=tmp_path)
    assert "root 'y' has no gradient and shape (2,)" in message
    assert files(tmp_path) == {"vector.py"}


def test_dot_missing(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    message = fails(EXAMPLES / "add_mul.py", cwd=tmp_path, env=env)
    assert "'dot'" in message and "Graphviz" in message and "install" in message
    assert files(tmp_path) == {"bin"}
    # The IR exports need no graphviz.
    done = run_cli("render", EXAMPLES / "add_mul.py", "-o", "g.json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr.decode()


def test_no_room_for_dots_files_is_one_clear_error(monkeypatch, tmp_path):
    import tempfile

    monkeypatch.setenv("BACKPROPVIZ_CACHE", str(tmp_path))  # (none kept: dot runs)

    from backpropviz.errors import DrawError
    from backpropviz.graphviz import run_dot

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", full)
    with pytest.raises(DrawError, match=r"temporary files .*No space left on device.*TMPDIR"):
        run_dot("digraph { a -> b }")


@pytest.mark.parametrize("output", ["fig.svgz", "fig"])
def test_unknown_format_lists_the_formats(output, tmp_path):
    message = fails(EXAMPLES / "add_mul.py", "-o", output, cwd=tmp_path, status=2)
    assert "svg" in message and "graphml" in message
    assert files(tmp_path) == set()
    message = fails(EXAMPLES / "add_mul.py", "--format", "svgz", cwd=tmp_path, status=2)
    assert "invalid choice: 'svgz'" in message and "'graphml'" in message


def test_output_not_writable(tmp_path):
    message = fails(EXAMPLES / "add_mul.py", "-o", "missing/fig.svg", cwd=tmp_path)
    assert message == ("backpropviz: error: cannot write missing/fig.svg: no such directory "
                       "'missing'")
    # An existing directory is a folder to draw into, as for cp (tests/test_many_figures.py).
    (tmp_path / "folder.svg").mkdir()
    ok(EXAMPLES / "add_mul.py", "-o", "folder.svg", cwd=tmp_path)
    assert files(tmp_path / "folder.svg") == {"add_mul.svg"}
    assert not (tmp_path / "missing").exists()  # checked before the script ran
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert "permission denied" in fails(EXAMPLES / "add_mul.py", "-o", "locked/f.svg",
                                            cwd=tmp_path)


def test_graph_larger_than_max_nodes(reference_graph, tmp_path):
    message = fails(EXAMPLES / "d2l_mlp_scalar.py", "--max-nodes", "10", cwd=tmp_path)
    nodes = reference_graph("d2l_mlp_scalar", "L").number_of_nodes()
    assert f"the graph has {nodes} nodes" in message and "Tensor form" in message
    assert files(tmp_path) == set()
    ok(EXAMPLES / "d2l_mlp_scalar.py", "--max-nodes", str(nodes), "-o", "x.json", cwd=tmp_path)


def test_large_graph_is_refused_quickly(tmp_path):
    script(tmp_path, "chain.py", """
        from backpropviz import Value
        x = Value(0.5)
        y = x
        for _ in range(100_000):
            y = y * 1.0001
        """)
    message = fails("chain.py", cwd=tmp_path, command=run)  # run's timeout bounds the time
    assert "the graph has 300001 nodes" in message


def test_a_tensor_without_entries_is_one_clear_error(tmp_path):
    script(tmp_path, "empty.py", """
        import numpy as np
        from backpropviz import Tensor
        W = Tensor(np.ones((0, 3)), requires_grad=True)
        L = (W * W).sum()
        """)  # (its IR's nested lists, [], held no shape (0, 3): validate refused its own IR)
    assert fails("empty.py", "-o", "e.svg", cwd=tmp_path) == (
        "backpropviz: error: W has no entries (shape (0, 3)): there is nothing to draw; give "
        "it one entry or more")
    assert "e.svg" not in files(tmp_path)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_graph_of_nan_and_inf_is_drawn_without_numpys_warnings(tmp_path):
    script(tmp_path, "nan.py", """
        from backpropviz import Value
        a, b = Value(float("nan"), label="a"), Value(float("inf"), label="b")
        c = a * b + b
        """)  # (np.nanmax warned of a gradient all nan, in the engine's own check)
    done = ok("nan.py", "-o", "nan.svg", cwd=tmp_path)
    assert b"Warning" not in done.stderr


def test_a_script_timeout_longer_than_the_timer_holds_is_none(tmp_path):
    ok(EXAMPLES / "add_mul.py", "--script-timeout", "1e300", "-o", "a.svg", cwd=tmp_path)


def test_a_failed_run_leaves_the_old_output_alone(tmp_path):
    (tmp_path / "fig.svg").write_text("old picture")
    script(tmp_path, "boom.py", "from backpropviz import Value\nx = Value(1.0) * 2\n1 / 0\n")
    fails("boom.py", "-o", "fig.svg", cwd=tmp_path)
    assert (tmp_path / "fig.svg").read_text() == "old picture"
    script(tmp_path, "interrupted.py", "x = 1\nraise KeyboardInterrupt\n")
    done = run("render", "interrupted.py", "-o", "fig.svg", cwd=tmp_path)
    assert done.returncode == 130
    assert files(tmp_path) == {"fig.svg", "boom.py", "interrupted.py"}


@pytest.mark.parametrize(("args", "message"), [
    (["--quality", "h"], "--quality: for videos only"),
    (["-qh"], "--quality: for videos only"),  # (manim's -qh)
    (["--steps", "f", "--no-backward"], "--steps shows the backward pass"),
    (["--precision", "0"], "must be positive"),
    (["--rankdir", "XY"], "invalid choice: 'XY'"),
    # (a ValueError from Python's float formatting; manim's wait of 0 s, its clock's overflow)
    (["--precision", "99999999999"], "--precision: must be 1 to 17, got 99999999999"),
    (["--speed", "1e300", "-o", "a.gif"], "--speed: must be 0.01 to 100, got 1e300"),
    (["--speed", "1e-300", "-o", "a.gif"], "--speed: must be 0.01 to 100, got 1e-300"),
])
def test_usage_errors_exit_2_before_running_the_script(args, message, tmp_path):
    script(tmp_path, "side_effect.py", "open('ran', 'w').close()\n")
    assert message in fails("side_effect.py", *args, cwd=tmp_path, status=2)
    assert files(tmp_path) == {"side_effect.py"}


def test_pytorch_missing_is_one_line(tmp_path, monkeypatch, capsys):
    script(tmp_path, "uses_torch.py", "import torch\nx = torch.ones(2, requires_grad=True)\n")
    find_spec = script_front_end.importlib.util.find_spec
    monkeypatch.setattr(script_front_end.importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else find_spec(name, *a))
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails, as uninstalled
    monkeypatch.chdir(tmp_path)
    assert cli.main(["render", "uses_torch.py"]) == 1
    assert capsys.readouterr().err == ("backpropviz: error: this script uses PyTorch; install "
                                       "it with: pip install 'backpropviz[torch]'\n")


def test_torch_imports_are_found_by_the_parser_not_by_the_line(tmp_path):
    script(tmp_path, "comma.py", "import math, torch\n"
           "x = torch.tensor([1.0, 2.0], requires_grad=True)\nL = (x * x).sum()\n")
    ok("comma.py", "-o", "comma.json", cwd=tmp_path)
    G = written_graph(tmp_path / "comma.json")
    assert {G.nodes[v]["label"]: G.nodes[v]["grad"] for v in G
            if G.nodes[v]["kind"] == "value"}["x"] == [2.0, 4.0]
    assert script_front_end._imports("from torch import nn\n", "torch")
    assert not script_front_end._imports(
        '"""\nimport torch\n"""\nfrom backpropviz import Value\n', "torch")
    assert not script_front_end._imports("from .torch import x\n", "torch")


def test_pytorch_script_without_backward_gets_the_seeds_gradients(tmp_path):
    source = (EXAMPLES / "torch_mlp.py").read_text()
    script(tmp_path, "forward_only.py", "\n".join(
        line for line in source.splitlines() if "backward" not in line and "print" not in line))
    ok("forward_only.py", "-o", "torch.json", cwd=tmp_path)
    G = written_graph(tmp_path / "torch.json")
    grads = {G.nodes[v]["label"]: G.nodes[v]["grad"] for v in G
             if G.nodes[v]["kind"] == "value" and G.nodes[v]["label"]}
    assert grads["L"] == 1.0 and grads["h"] == [-4.0, 2.0] and grads["z"] == [0.0, 2.0]
    assert grads["W1"] == [[0.0, 0.0], [2.0, 4.0]] and grads["W2"] == [[0.0, -4.0]]


def test_an_engine_script_that_only_tries_torch_runs_without_it(tmp_path, monkeypatch):
    script(tmp_path, "optional.py", "try:\n    import torch\nexcept ImportError:\n"
           "    torch = None\nfrom backpropviz import Value\na = Value(2.0)\nb = a * a\n")
    find_spec = script_front_end.importlib.util.find_spec
    monkeypatch.setattr(script_front_end.importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else find_spec(name, *a))
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["render", "optional.py"]) == 0
    assert "<svg" in (tmp_path / "optional.svg").read_text()


def test_dot_is_stopped_at_the_time_limit(tmp_path, monkeypatch):
    # (nothing read back: a layout of the same graph kept by an earlier run would
    # need no time at all)
    monkeypatch.setenv("BACKPROPVIZ_CACHE", "")
    source = ("from backpropviz import Value\nx = [Value(float(i)) for i in range(300)]\n"
              "L = Value(0.0)\nfor i, a in enumerate(x):\n    L = L + a * x[(i * 7) % 300]\n")
    script(tmp_path, "wide.py", source)
    start = time.monotonic()
    message = fails("wide.py", "-o", "wide.svg", "--timeout", "0.05", cwd=tmp_path)
    assert time.monotonic() - start < 30
    assert message.startswith("backpropviz: error: dot did not finish the layout within 0.05 s")
    assert "wide.svg" not in files(tmp_path)


def test_a_root_below_the_loss_gets_its_gradient_from_beyond_the_drawing(tmp_path):
    script(tmp_path, "inner.py", "from backpropviz import Value\nx = Value(2.0)\n"
           "h = x * 3\nloss = (h - 1) ** 2\nloss.backward()\n")
    ok("inner.py", "h", "-o", "inner.json", cwd=tmp_path)
    G = written_graph(tmp_path / "inner.json")
    (root,) = G.graph["roots"]
    assert G.graph["seeds"] == {root: 10.0}  # dloss/dh = 2(h - 1)
    assert G.graph["entered"] and "beyond the drawing" in G.graph["notes"][0]


def test_fit_writes_a_figure_the_size_of_the_frame(tmp_path):
    from PIL import Image

    ok(EXAMPLES / "d2l_objective.py", "--fit", "1920x1080", "-o", "slide.png", cwd=tmp_path)
    width, height = Image.open(tmp_path / "slide.png").size
    assert (width == 1920 and height <= 1080) or (height == 1080 and width <= 1920)
    done = ok(EXAMPLES / "d2l_mlp.py", "--fit", "1920x1080", "-o", "mlp.svg", cwd=tmp_path)
    assert b"note:" not in done.stderr  # readable at that size (28 px numbers): nothing to say
    done = ok(EXAMPLES / "mlp3.py", "--fit", "1920x1080", "-o", "mlp3.svg", cwd=tmp_path)
    # three layers' 51 numbers reach the 22 px a slide wants of a graph that size
    assert b"note:" not in done.stderr
    done = ok(EXAMPLES / "d2l_objective.py", "--fit", "1920x1080", "-o", "slide.svg",
              cwd=tmp_path)
    assert b"note:" not in done.stderr  # the book's objective is readable now
    svg_size = re.search(rb'<svg width="1920px" height="([0-9.]+)px"',
                         (tmp_path / "slide.svg").read_bytes())
    assert svg_size
    ok(EXAMPLES / "d2l_objective.py", "--fit", "1920x1080", "-o", "slide.pdf", cwd=tmp_path)
    pdf = (tmp_path / "slide.pdf").read_bytes()
    box = re.search(rb"MediaBox\s*\[\s*0 0 ([0-9.]+) ([0-9.]+)", pdf)
    assert float(box.group(1)) == 1920 and float(box.group(2)) == pytest.approx(
        float(svg_size.group(1)), abs=1)  # the page is the frame's width, no margin


def test_fit_says_when_a_graph_is_too_big_for_the_frame(tmp_path):
    script = tmp_path / "long.py"
    script.write_text("from backpropviz import Value\nx = Value(0.5)\n"
                      "for _ in range(40):\n    x = (x * 1.01).tanh()\n")
    done = ok(script, "--fit", "1280x720", "-o", "long.svg", cwd=tmp_path)
    # it says what it reached and what the graph's size wants, in one line, and what helps
    note = re.search(rb"note: at 1280x720 the numbers are ([0-9.]+) px tall \(a slide wants "
                     rb"22 px and up for a graph of more than 40 numbers\): [^\n]*--compact\n",
                     done.stderr)
    assert note and float(note.group(1)) < 22
    assert (tmp_path / "long.svg").exists()  # drawn all the same


@pytest.mark.parametrize(("args", "message"), [
    (["--fit", "big"], "WIDTHxHEIGHT"),
    (["--fit", "1920x1080", "-o", "g.json"], "--fit lays out figures"),
    (["--fit", "1920x1080", "-o", "g.html"], "the page fits itself"),
    (["--symbolic", "-o", "g.html"], "--symbolic draws a figure without numbers"),
    (["--symbolic", "--steps", "steps"], "--symbolic draws a figure without numbers"),
    (["--modules", "-o", "g.json"], "--modules: how the picture draws the graph; json "),
    (["--compact", "--depth", "2", "-o", "g.txt"], "--compact, --depth: how the picture"),
])
def test_figure_option_usage_errors(tmp_path, args, message):
    assert message in fails(EXAMPLES / "add_mul.py", *args, cwd=tmp_path, status=2)
    assert files(tmp_path) == set()


def test_the_book_figure_from_the_command_line(tmp_path):
    ok(EXAMPLES / "d2l_figure.py", "--rankdir", "book", "--symbolic", "-o", "fig.svg",
       cwd=tmp_path)
    ok(EXAMPLES / "d2l_figure.py", "--modules", "--expand", "--compact", "-o", "all.svg",
       cwd=tmp_path)
    svg = (tmp_path / "fig.svg").read_text()
    assert "<title>op" in svg and ">l</text>" in svg and ">s</text>" in svg


def test_how_the_graph_was_simplified_is_said_on_stderr_not_drawn(tmp_path):
    # scalar_neuron's weighted sum x1·w1 + x2·w2 + b is drawn as one +: the
    # figure shows that by itself, and the remark goes to stderr.
    done = ok(EXAMPLES / "scalar_neuron.py", "-o", "neuron.svg", cwd=tmp_path)
    assert b"note: a chain of + whose inner sums have no name" in done.stderr
    svg = (tmp_path / "neuron.svg").read_text(encoding="utf-8")
    assert "inner sums" not in svg
    plus = re.findall(r'class="node op add[^"]*"', svg)
    assert len(plus) == 1  # one + for the whole sum
    done = ok(EXAMPLES / "scalar_neuron.py", "-o", "neuron.txt", cwd=tmp_path)
    assert "# note: a chain of +" in (tmp_path / "neuron.txt").read_text(encoding="utf-8")
