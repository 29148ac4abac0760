"""One API: roots everywhere a graph goes, one verb to write, strict JSON, declared imports."""

from __future__ import annotations

import ast
import json
import math
import re
import sys

import pytest
from test_cli import ROOT, ok, script

from backpropviz import Value, draw
from backpropviz.diagram import Diagram
from backpropviz.errors import DrawError
from backpropviz.html import Page, render_html, step_through, to_html
from backpropviz.ir import IRError, from_node_link
from tests.in_process import run_cli


def fork() -> dict:
    """b = a + a, c = b·b at a = 3: dc/db = 2b = 12, dc/da = 2·12 = 24, by hand."""
    a = Value(3.0)
    b = a + a
    c = b * b
    c.backward()
    return {"a": a, "b": b, "c": c}


def test_the_page_takes_a_root_as_draw_does(tmp_path):
    names = fork()
    page = to_html(names["c"], names=names)
    data = json.loads(re.search(r'<script type="application/json" id="bpv-data">(.*?)</script>',
                                page, re.S).group(1))
    last = {value: detail["grads"][-1][1] for value, detail in data["details"].items()}
    by_name = {value["name"]: value_id for value_id, value in data["values"].items()}
    assert last[by_name["a"]] == [["24"]] and last[by_name["b"]] == [["12"]]
    path = render_html([names["c"]], tmp_path / "fork.html", names=names)
    assert path.read_text(encoding="utf-8") == page


def test_a_video_takes_a_root(tmp_path):
    pytest.importorskip("manim")
    av = pytest.importorskip("av")
    from backpropviz.animate import render_video

    names = fork()
    out = render_video(names["c"], tmp_path / "fork.mp4", names=names, phase="backward",
                       speed=4.0, progress=False)  # the shortest clip that has the sweep
    with av.open(str(out)) as movie:
        assert movie.streams.video[0].frames > 0
    assert "∂c/∂a" in (tmp_path / "fork.srt").read_text(encoding="utf-8")


def test_diagram_and_page_write_with_one_verb(tmp_path):
    names = fork()
    diagram, page = draw(names["c"], names=names), step_through(names["c"], names=names)
    assert Diagram.save is Diagram.render and Page.save is Page.render
    assert page.render(tmp_path / "p.html").read_text(encoding="utf-8") == page.html
    assert diagram.save(tmp_path / "d.svg").read_text() == diagram.svg


def test_render_adds_the_formats_extension_as_graphviz_does(tmp_path):
    diagram = draw(fork()["c"])
    assert diagram.render(tmp_path / "graph", format="svg") == tmp_path / "graph.svg"
    assert diagram.render(tmp_path / "fig.v2", format="png") == tmp_path / "fig.v2.png"
    assert diagram.render(tmp_path / "same.svg", format="svg") == tmp_path / "same.svg"
    with pytest.raises(DrawError, match=r"is a \.png file but the format is 'svg'"):
        diagram.render(tmp_path / "x.png", format="svg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.v2.png", "graph.svg", "same.svg"]


def _strict(text: str) -> dict:
    def refuse(constant: str) -> None:
        raise ValueError(f"not strict JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def test_the_ir_is_strict_json_and_reads_back(tmp_path):
    script(tmp_path, "edges.py", """
        from backpropviz import Value
        zero = Value(0.0)
        logged = zero.log()            # -inf; its gradient 1/0 = inf
        minus = Value(-1.0)
        root = minus.sqrt()            # nan
        L = logged + root
        L.backward()
        """)
    ok("edges.py", "-o", "g.json", cwd=tmp_path)
    text = (tmp_path / "g.json").read_text()
    data = _strict(text)
    by_label = {node["label"]: node for node in data["nodes"] if node["kind"] == "value"}
    assert by_label["logged"]["data"] == "-Infinity" and by_label["zero"]["grad"] == "Infinity"
    assert by_label["root"]["data"] == "NaN"
    G = from_node_link(text)  # the JSON text, as the docstring says
    numbers = {attrs["label"]: attrs for _, attrs in G.nodes(data=True) if attrs.get("label")}
    assert numbers["logged"]["data"] == -math.inf and numbers["zero"]["grad"] == math.inf
    assert math.isnan(numbers["root"]["data"])
    parsed = from_node_link(data)  # or from the parsed data
    assert {attrs["label"]: attrs["grad"] for _, attrs in parsed.nodes(data=True)
            if attrs.get("label") == "zero"} == {"zero": math.inf}
    with pytest.raises(IRError, match="not JSON"):
        from_node_link("{nodes")


def test_json_means_the_ir_from_python_and_from_the_command_line(tmp_path):
    script(tmp_path, "fork.py", "from backpropviz import Value\n"
                                "a = Value(3.0)\nb = a + a\nc = b * b\nc.backward()\n")
    ok("fork.py", "-o", "cli.json", cwd=tmp_path)
    names = fork()
    draw(names["c"], names=names).render(tmp_path / "api.json")
    cli, api = _strict((tmp_path / "cli.json").read_text()), _strict(
        (tmp_path / "api.json").read_text())
    assert cli == api
    assert {n["label"]: n["grad"] for n in api["nodes"] if n["kind"] == "value"} == {
        "a": 24.0, "b": 12.0, "c": 1.0}
    layout = _strict(draw(names["c"]).render(tmp_path / "layout.json",
                                             format="graphviz-json").read_text())
    assert layout["name"] == "backprop" and "objects" in layout


def _imports() -> set[str]:
    """The third-party packages the library imports, at the top or lazily."""
    found = set()
    for path in (ROOT / "backpropviz").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"backpropviz"}


def test_the_declared_dependencies_are_the_imported_ones():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    required = {re.match(r"[A-Za-z0-9_-]+", dep).group() for dep in project["dependencies"]}
    extras = {re.match(r"[A-Za-z0-9_-]+", dep).group()
              for name, deps in project["optional-dependencies"].items() if name != "dev"
              for dep in deps if not dep.startswith("backpropviz")}
    imported = _imports()
    assert required <= imported, "declared but never imported"
    assert imported <= required | extras | _HOSTS, "imported but not declared"
    assert "graphviz" not in required  # dot is run as a program
    (torch,) = project["optional-dependencies"]["torch"]
    assert torch.startswith("torch>=")


# Imported only by the extensions that run inside a program the user already has:
# the Sphinx directive (backpropviz.sphinx) and the cell magic (backpropviz.notebook).
_HOSTS = {"sphinx", "docutils", "IPython"}


def test_help_is_plain_text_and_lists_each_command_on_one_line(tmp_path):
    top = run_cli("--help", cwd=tmp_path).stdout.decode()
    assert "`" not in top and "`" not in run_cli("render", "--help", cwd=tmp_path).stdout.decode()
    listed = [line.split() for line in top.splitlines() if line.startswith("    ")]
    assert [words[0] for words in listed] == ["render", "check", "memory"]
    assert all(len(words) > 3 for words in listed)  # a description on the same line
    assert "render SCRIPT" in top
