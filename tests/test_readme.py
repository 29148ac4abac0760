"""The README's commands really run, and its pictures exist."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
CLI = Path(sys.executable).with_name("backpropviz")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def _command_lines(command: str) -> list[str]:
    return [line.split("#")[0].strip() for block in _blocks("sh")
            for line in block.splitlines() if f"backpropviz {command}" in line]


RENDER_LINES = _command_lines("render")
MEMORY_LINES = _command_lines("memory")


def test_readme_shows_render_commands():
    assert len(RENDER_LINES) >= 5


def test_readme_shows_memory_commands():
    assert len(MEMORY_LINES) >= 2


@pytest.mark.parametrize("line", RENDER_LINES + MEMORY_LINES)
def test_render_command_runs(line, tmp_path):
    words = shlex.split(line)
    assert words[0] == ".venv/bin/backpropviz" and words[1] in ("render", "memory")
    script = ROOT / words[2]
    result = subprocess.run([str(CLI), words[1], str(script), *words[3:]], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    if "-o" in words:
        out = tmp_path / words[words.index("-o") + 1]
        assert out.stat().st_size > 0
    elif "--steps" in words:
        frames = sorted((tmp_path / words[words.index("--steps") + 1]).iterdir())
        assert frames and frames[0].name == "step-000.svg"
    else:
        assert (tmp_path / f"{script.stem}.svg").stat().st_size > 0


def test_python_example_runs(tmp_path):
    (code,) = _blocks("python")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["-9.0", "-3.0", "-3.0", "3.0"]
    assert "<svg" in (tmp_path / "e.svg").read_text()


def test_pictures_exist():
    pictures = re.findall(r"\]\((assets/[^)]+)\)", README)
    assert pictures
    for picture in pictures:
        assert (ROOT / picture).stat().st_size > 0, picture


def test_make_targets_named_in_readme_exist():
    makefile = (ROOT / "Makefile").read_text()
    for target in re.findall(r"^make (\w+)", README, flags=re.M):
        assert re.search(rf"^{target}:", makefile, flags=re.M), target


def test_the_check_report_shown_is_the_real_one(tmp_path):
    (block,) = [block for _, block in re.findall(r"^```(\w*)\n(.*?)^```", README,
                                                 flags=re.S | re.M)
                if block.startswith("$ backpropviz check")]
    command, *shown = block.strip().splitlines()
    words = shlex.split(command.removeprefix("$ "))
    words[words.index("-o") + 1] = str(tmp_path / "report.png")
    result = subprocess.run([str(CLI), *words[1:]], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    for line in shown:
        if line.strip() != "...":
            assert line in lines
    assert (tmp_path / "report.png").stat().st_size > 0
