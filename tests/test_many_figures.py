"""Many figures at once: several scripts in one call, in parallel, each failing alone."""

from __future__ import annotations

import json

from test_cli import EXAMPLES, files, ok, script

from tests.in_process import run_cli

FORK = "from backpropviz import Value\na = Value(3.0)\nb = a + a\nc = b * b\nc.backward()\n"


def grads(path) -> dict:
    data = json.loads(path.read_text())
    return {node["label"]: node["grad"] for node in data["nodes"]
            if node["kind"] == "value" and node["label"]}


def test_several_scripts_into_a_folder_and_one_failure(tmp_path):
    script(tmp_path, "fork.py", FORK)
    script(tmp_path, "square.py", "from backpropviz import Value\nx = Value(-2.0)\ny = x * x\n")
    script(tmp_path, "broken.py", "print('starting')\nraise RuntimeError('on purpose')\n")
    done = run_cli("render", "fork.py", "broken.py", "square.py", "-o", "figures/",
               "--format", "json", "-j", "2", cwd=tmp_path)
    assert done.returncode == 1
    assert grads(tmp_path / "figures" / "fork.json") == {"a": 24.0, "b": 12.0, "c": 1.0}
    assert grads(tmp_path / "figures" / "square.json") == {"x": -4.0, "y": 1.0}  # 2x, by hand
    assert files(tmp_path / "figures") == {"fork.json", "square.json"}
    lines = done.stderr.decode().splitlines()
    progress = [line for line in lines if line.startswith("[")]
    assert sorted(line[:5] for line in progress) == ["[1/3]", "[2/3]", "[3/3]"]
    assert {line.split()[1:3][1]: line.split()[1] for line in progress} == {
        "fork.py": "ok", "square.py": "ok", "broken.py:": "FAILED"}
    assert "   | RuntimeError: on purpose" in done.stderr.decode()
    assert "   | starting" in done.stderr.decode()
    assert lines[-1] == ("backpropviz: drew 2 of 3 scripts into figures/ in "
                         f"{lines[-1].split(' in ')[-1].split(' s ')[0]} s (2 at a time); "
                         "failed: broken.py")


def test_one_call_draws_what_separate_calls_draw(tmp_path):
    examples = [EXAMPLES / f"{name}.py" for name in ("add_mul", "d2l_mlp", "fork")]
    ok(*examples, "-o", "together", cwd=tmp_path)
    for example in examples:
        ok(example, "-o", f"{example.stem}.svg", cwd=tmp_path)
        assert (tmp_path / "together" / f"{example.stem}.svg").read_bytes() == (
            tmp_path / f"{example.stem}.svg").read_bytes()


def test_each_script_runs_as_if_alone(tmp_path):
    # Two lectures, each with its own helper module of the same name.
    for lecture, scale in (("one", 2.0), ("two", 5.0)):
        folder = tmp_path / lecture
        folder.mkdir()
        script(folder, "helper.py", f"SCALE = {scale}\n")
        script(folder, f"{lecture}.py", "import sys\nfrom helper import SCALE\n"
               "from backpropviz import Value\nx = Value(1.0)\ny = x * SCALE\n")
    ok("one/one.py", "two/two.py", "-o", "out/", "--format", "json", "-j", "1", cwd=tmp_path)
    assert grads(tmp_path / "out" / "one.json")["x"] == 2.0
    assert grads(tmp_path / "out" / "two.json")["x"] == 5.0


# Each script waits until all three have started: with three jobs they meet; one
# at a time, the first would wait in vain (and fail after 60 s).
MEETING = """
    import pathlib, time
    from backpropviz import Value
    here = pathlib.Path(__file__).parent
    (here / (pathlib.Path(__file__).stem + ".started")).touch()
    deadline = time.monotonic() + 60
    while len(list(here.glob("*.started"))) < 3:
        if time.monotonic() > deadline:
            raise SystemExit("the other scripts never started: not run in parallel")
        time.sleep(0.05)
    x = Value(1.0)
    y = x + x
    """


def test_jobs_run_at_the_same_time(tmp_path):
    for name in ("a", "b", "c"):
        script(tmp_path, f"{name}.py", MEETING)
    ok("a.py", "b.py", "c.py", "-j", "3", "-o", "out/", "--format", "json", cwd=tmp_path)
    assert files(tmp_path / "out") == {"a.json", "b.json", "c.json"}


def test_usage_mistakes_with_several_scripts(tmp_path):
    script(tmp_path, "fork.py", FORK)
    (tmp_path / "other").mkdir()
    script(tmp_path / "other", "fork.py", FORK)
    done = run_cli("render", "fork.py", "other/fork.py", "-o", "out/", cwd=tmp_path)
    assert done.returncode == 2 and b"would both be drawn as fork.svg" in done.stderr
    done = run_cli("render", "fork.py", "other/fork.py", "-o", "-", cwd=tmp_path)
    assert done.returncode == 2 and b"cannot all go to stdout" in done.stderr
    assert files(tmp_path) == {"fork.py", "other"}  # no out/


def test_one_script_into_a_folder(tmp_path):
    script(tmp_path, "fork.py", FORK)
    (tmp_path / "figs").mkdir()
    ok("fork.py", "-o", "figs", "--format", "json", cwd=tmp_path)
    assert grads(tmp_path / "figs" / "fork.json")["a"] == 24.0
