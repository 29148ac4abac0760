"""The README's commands really run, its pictures exist and its links lead somewhere."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.in_process import run_cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
# The exit status each command is documented to give: check grades the
# capstone's buggy engine, so it exits 1 (some gradients differ).
EXPECTED_STATUS = {"render": 0, "memory": 0, "check": 1}


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.S | re.M)


COMMAND_LINES = [line.split("#")[0].strip() for block in _blocks("sh")
                 for line in block.splitlines() if line.startswith(".venv/bin/backpropviz ")]


def test_readme_shows_each_command():
    commands = [shlex.split(line)[1] for line in COMMAND_LINES]
    assert set(commands) == set(EXPECTED_STATUS)
    assert commands.count("render") >= 5


@pytest.mark.parametrize("line", COMMAND_LINES)
def test_command_runs(line, tmp_path):
    words = shlex.split(line)
    command, script = words[1], ROOT / words[2]
    # By cli.main in this process, as the entry point runs it (tests/in_process.py; the
    # entry point itself is tests/test_cli.py's).
    result = run_cli(command, script, *words[3:], cwd=tmp_path, text=True)
    assert result.returncode == EXPECTED_STATUS[command], result.stderr
    if "-o" in words:
        out = tmp_path / words[words.index("-o") + 1]
        assert out.stat().st_size > 0
    elif "--steps" in words:
        frames = sorted((tmp_path / words[words.index("--steps") + 1]).iterdir())
        assert frames and frames[0].name == "step-000.svg"
    elif command == "check":
        assert "differ from the reference" in result.stdout
    else:
        assert (tmp_path / f"{script.stem}.svg").stat().st_size > 0


def test_python_example_runs(tmp_path):
    (code,) = _blocks("python")
    assert len(code.strip().splitlines()) <= 10
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["-9.0", "-3.0", "-3.0", "3.0"]
    svg = (tmp_path / "fig.svg").read_text()
    # names=locals() names the boxes after the variables
    assert "<svg" in svg and ">d</text>" in svg and ">L</text>" in svg


def test_pictures_exist_and_make_assets_makes_them():
    pictures = re.findall(r"\]\((assets/[^)]+)\)", README)
    assert pictures
    makefile = (ROOT / "Makefile").read_text()
    for picture in pictures:
        assert (ROOT / picture).stat().st_size > 0, picture
        assert f"-o {picture}" in makefile, f"make assets does not make {picture}"


def test_links_lead_to_files():
    links = [link for link in re.findall(r"\]\(([^)#]+)\)", README)
             if not link.startswith(("http", "assets/"))]
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        assert (ROOT / link).exists(), link


def test_make_targets_named_in_readme_exist():
    makefile = (ROOT / "Makefile").read_text()
    targets = re.findall(r"(?:^|`)make (\w+)", README, flags=re.M)
    assert {"demo", "test", "docs"} <= set(targets)
    for target in targets:
        assert re.search(rf"^{target}:", makefile, flags=re.M), target


def test_the_check_report_shown_is_the_real_one(tmp_path):
    (block,) = [block for block in _blocks("text") if block.startswith("$ backpropviz check")]
    command, *shown = block.strip().splitlines()
    words = shlex.split(command.removeprefix("$ "))
    words[words.index("-o") + 1] = str(tmp_path / "report.png")
    result = run_cli(*words[1:], cwd=ROOT, text=True)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    for line in shown:
        if line.strip() != "...":
            assert line in lines
    assert (tmp_path / "report.png").stat().st_size > 0
