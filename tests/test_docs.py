"""The documentation builds with warnings as errors, and what it shows is the tool's own."""

from __future__ import annotations

import argparse
import doctest
import fcntl
import html
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from backpropviz.cli import build_parser
from backpropviz.script import run_script
from tests.in_process import run_cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The HTML docs, built from scratch with -W (every warning an error), of this checkout:
    once per run, the pytest-xdist workers sharing one build (the first to come builds it)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # this run's folder, which every worker's is in
    out = shared / "docs-build"
    with open(shared / "docs-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "html" / "index.html").exists() and not (out / "failed").exists():
            out.mkdir(exist_ok=True)
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            result = subprocess.run(
                [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html",
                 "-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
                capture_output=True, text=True, env=env, timeout=300)
            if result.returncode != 0:
                (out / "failed").write_text(result.stderr)
    failed = out / "failed"
    assert not failed.exists(), failed.read_text()
    return out / "html"


def _text(markup: str) -> str:
    """What a reader sees of some HTML: the text, unescaped, its spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def _sections(page: str) -> dict[str, str]:
    """The CLI page split by command: "" (the top level), "render", "check", "memory"."""
    parts = re.split(r'<section id="backpropviz-(\w+)">', page)
    return {"": parts[0], **dict(zip(parts[1::2], parts[2::2], strict=True))}


def _written(action: argparse.Action) -> set[str]:
    """How the reference must name an argument: its flags, or a positional's metavar."""
    return set(action.option_strings) or {action.metavar or action.dest}


def test_the_cli_page_names_every_option_the_parser_has_and_no_other(built):
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    sections = _sections((built / "cli.html").read_text())
    assert set(sections) == {"", *commands.choices}
    for name, command in [("", parser), *commands.choices.items()]:
        section = sections[name]
        terms = [_text(term) for term in re.findall(r'<dt class="cli-argument">(.*?)</dt>',
                                                     section, flags=re.S)]
        shown = {word.split()[0].lstrip("[") for term in terms for word in term.split(", ")}
        expected = set().union(*(_written(action) for action in command._actions))
        assert shown == expected, name
        text = _text(section)
        for action in command._actions:
            for choice in action.choices or ():
                assert str(choice) in text, (name, action.dest, choice)
            if action.help and not isinstance(action, argparse._SubParsersAction):
                assert " ".join(action.help.split()) in text, (name, action.dest)


def _directives(source: str) -> list[str]:
    """The options block of each ``.. backpropviz::`` directive in a page's source."""
    return re.findall(r"^\.\. backpropviz:: .*\n((?:   .*\n)*)", source, flags=re.M)


PAGES_WITH_FIGURES = [path.stem for path in sorted(DOCS.glob("*.rst"))
                      if _directives(path.read_text())]


def test_the_docs_draw_a_handful_of_figures():
    scripts = set(re.findall(r"^\.\. backpropviz:: (\S+)",
                             "".join(p.read_text() for p in DOCS.glob("*.rst")), flags=re.M))
    assert 5 <= len(scripts) <= 8, scripts
    assert len(PAGES_WITH_FIGURES) >= 5


@pytest.mark.parametrize("page", PAGES_WITH_FIGURES)
def test_each_figure_is_drawn_into_the_build(built, page):
    options = _directives((DOCS / f"{page}.rst").read_text())
    rendered = (built / f"{page}.html").read_text()
    images = re.findall(r'<img alt="[^"]*" class="backpropviz" src="([^"]+)"', rendered)
    pictures = [block for block in options if ":format: html" not in block]
    steps = sum(":steps:" in block for block in pictures)
    # a picture each, and two or more for :steps: (the seed, then each op)
    assert len(images) >= len(pictures) + steps
    for source in images:
        path = built / source
        data = path.read_bytes()
        if path.suffix == ".svg":
            svg = ET.fromstring(data)
            assert svg.tag.endswith("svg") and len(svg.findall(".//{*}text")) > 0, source
        else:
            assert path.suffix == ".png" and data.startswith(b"\x89PNG"), source
    for _ in range(len(options) - len(pictures)):  # the step-through page, inline
        assert "<iframe srcdoc=" in rendered


def test_the_ir_page_shows_the_contract(built):
    from backpropviz.schema import ATTRIBUTES

    text = _text((built / "ir.html").read_text())
    assert "The IR contract" in text
    missing = [spec.name for spec in ATTRIBUTES if spec.name not in text]
    assert missing == []
    assert all(spec.meaning.split()[0] in text for spec in ATTRIBUTES)


def test_the_ir_session_shown_is_what_to_networkx_gives():
    result = doctest.testfile(str(DOCS / "ir.rst"), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 8 and result.failed == 0


def test_the_check_report_shown_is_the_real_one(tmp_path):
    (block,) = re.findall(r"^   \$ (backpropviz check .*?)\n\n", (DOCS / "check.rst").read_text(),
                          flags=re.S | re.M)
    command, *shown = [line.removeprefix("   ") for line in block.splitlines()]
    words = command.split()
    words[words.index("-o") + 1] = str(tmp_path / "report.png")
    result = run_cli(*words[1:], cwd=ROOT, text=True)  # in this process (tests/in_process.py)
    assert result.returncode == 1
    assert result.stdout.splitlines() == shown
    assert (tmp_path / "report.png").stat().st_size > 0


def test_the_growth_tables_shown_are_the_scripts_output(capsys):
    source = (DOCS / "memory.rst").read_text()
    (table,) = re.findall(r"^\.\. code-block:: text\n\n((?:    .*\n)+)", source, flags=re.M)
    run_script(ROOT / "examples" / "memory_growth.py")  # as `python SCRIPT` runs it
    stdout = capsys.readouterr().out
    # (reST drops the indentation every line of a block has: here, one space)
    assert textwrap.dedent(stdout).splitlines() == textwrap.dedent(table).splitlines()


def test_the_text_form_shown_is_what_the_tool_writes():
    page = (DOCS / "ir.rst").read_text()
    shown = page.split("For ``examples/add_mul.py``:", 1)[1].split(".. code-block:: text", 1)[1]
    shown_lines = [line[3:] for line in shown.split("\n\n", 2)[1].splitlines()]
    from backpropviz.script import graph_of_script
    from backpropviz.text import to_text

    G = graph_of_script(DOCS.parent / "examples" / "add_mul.py", quiet=True)
    assert shown_lines == to_text(G).rstrip("\n").splitlines()
