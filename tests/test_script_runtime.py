"""Scripts that run too long or end oddly (--script-timeout, Ctrl-C, os._exit, sys.exit, a
signal), and Tensor.sum / mean with numpy's axis and keepdims, checked against references."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from backpropviz import Tensor, cli, gradcheck
from backpropviz.check import disagreements
from backpropviz.errors import UsageError
from backpropviz.ir import from_graphml, from_node_link, to_graphml, to_networkx, to_node_link
from backpropviz.node import EngineError
from backpropviz.options import Options
from backpropviz.output import render
from backpropviz.script import ScriptError, ScriptInterrupted, graph_of_script, run_script

BIN = str(Path(sys.executable).parent / "backpropviz")

# A training loop that never ends: the line it spins on is the one a report must name.
ENDLESS = """\
    from backpropviz import Value

    w = Value(0.5, label="w")

    def train_step(w):
        steps = 0
        while True: steps += 1

    train_step(w)
    """

# A script that waits in a C call (time.sleep), as one reading a slow data source does.
WAITING = """\
    import time

    def wait_for_data():
        print("waiting", flush=True)
        time.sleep(60)

    wait_for_data()
    """


def script(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def line_of(path: Path, text: str) -> int:
    """The number of the line of ``path`` that holds ``text``."""
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1)
                if text in line)


def command(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def ours(stderr: str) -> list[str]:
    """backpropviz's own lines of stderr."""
    return [line for line in stderr.splitlines() if line.startswith("backpropviz:")]


# ---------------------------------------------------------------- too long


def test_a_script_that_never_ends_is_stopped_after_its_timeout_and_says_where(
        tmp_path, monkeypatch, capsys):
    loop = script(tmp_path, "loop.py", ENDLESS)
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    assert cli.main(["render", "loop.py", "-o", "loop.svg", "--script-timeout", "0.5"]) == 1
    assert time.monotonic() - started < 20
    assert ours(capsys.readouterr().err) == [
        "backpropviz: error: the script ran longer than 0.5 s (--script-timeout); it was at "
        f"loop.py:{line_of(loop, 'steps += 1')} (in train_step)"]
    assert not (tmp_path / "loop.svg").exists()


def test_the_timeout_also_ends_a_wait_in_a_c_call(tmp_path):
    waiting = script(tmp_path, "waiting.py", WAITING)
    started = time.monotonic()
    with pytest.raises(ScriptError) as raised:
        run_script(waiting, script_timeout=0.3)
    assert time.monotonic() - started < 5  # not the 60 s of the sleep
    assert str(raised.value) == ("the script ran longer than 0.3 s (--script-timeout); it was "
                                 f"at {waiting}:{line_of(waiting, 'sleep(60)')} "
                                 "(in wait_for_data)")


def test_a_script_that_catches_the_stop_is_stopped_again(tmp_path):
    stubborn = script(tmp_path, "stubborn.py", """\
        while True:
            try:
                while True: pass
            except BaseException:
                print("caught it, going on")
        """)
    started = time.monotonic()
    with pytest.raises(ScriptError, match=r"ran longer than 0.2 s .*stubborn.py:\d+$"):
        run_script(stubborn, script_timeout=0.2)
    assert time.monotonic() - started < 10


def test_off_the_main_thread_the_timeout_is_refused_before_the_script_runs(tmp_path):
    loop = script(tmp_path, "loop.py", ENDLESS)
    caught: list[BaseException] = []

    def run() -> None:
        try:
            graph_of_script(loop, script_timeout=0.3)
        except BaseException as error:  # whatever it was, the test reports it
            caught.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive()  # refused, not run: the loop would never end
    assert [type(error) for error in caught] == [UsageError]
    assert str(caught[0]).startswith("script_timeout needs the main thread")


def test_check_and_memory_honour_the_timeout_too(tmp_path, monkeypatch, capsys):
    loop = script(tmp_path, "loop.py", ENDLESS)
    monkeypatch.chdir(tmp_path)
    for name, status in (("check", 2), ("memory", 1)):  # check: 2, could not grade
        capsys.readouterr()
        assert cli.main([name, "loop.py", "--script-timeout", "0.2"]) == status
        assert ours(capsys.readouterr().err) == [
            "backpropviz: error: the script ran longer than 0.2 s (--script-timeout); it "
            f"was at loop.py:{line_of(loop, 'steps += 1')} (in train_step)"]
    assert not (tmp_path / "loop_memory.svg").exists()


def test_a_script_within_its_time_is_drawn_as_without_one(tmp_path):
    quick = script(tmp_path, "quick.py", """\
        from backpropviz import Value
        a = Value(2.0)
        L = a * a + a
        """)
    G = graph_of_script(quick, script_timeout=30)
    grads = {attrs["label"]: attrs["grad"] for _, attrs in G.nodes(data=True)
             if attrs["kind"] == "value"}
    assert grads["a"] == 5.0  # dL/da = 2a + 1 at a = 2
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)  # put back
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_timeout_that_is_not_a_positive_number_is_refused(tmp_path, monkeypatch, capsys):
    for wrong in (0, -1.0, "5", float("nan")):
        with pytest.raises(UsageError, match="script_timeout must be a positive number"):
            Options(script_timeout=wrong)
    monkeypatch.chdir(tmp_path)
    script(tmp_path, "quick.py", "x = 1\n")
    assert cli.main(["render", "quick.py", "--script-timeout", "0"]) == 2
    assert "argument --script-timeout: must be positive, got 0" in capsys.readouterr().err


# ---------------------------------------------------------------- Ctrl-C


def test_ctrl_c_says_where_the_script_was(tmp_path):
    waiting = script(tmp_path, "train.py", WAITING)
    process = subprocess.Popen([BIN, "render", "train.py", "-o", "train.svg"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "waiting\n"  # the script runs,
        time.sleep(0.5)  # and is in its sleep by now: Ctrl-C
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert ours(stderr) == ["backpropviz: interrupted while the script was running, at "
                            f"train.py:{line_of(waiting, 'sleep(60)')} (in wait_for_data)"]
    assert "Traceback" not in stderr
    assert not (tmp_path / "train.svg").exists()


def test_ctrl_c_is_still_a_keyboard_interrupt_for_python_callers(tmp_path):
    interrupted = script(tmp_path, "interrupted.py", """\
        import os, signal
        os.kill(os.getpid(), signal.SIGINT)
        """)
    with pytest.raises(KeyboardInterrupt) as raised:
        run_script(interrupted)
    assert type(raised.value) is ScriptInterrupted
    assert str(raised.value) == ("interrupted while the script was running, at "
                                 f"{interrupted}:2")


# ---------------------------------------------------------------- how a script ends


def test_a_process_the_script_forks_is_stopped_by_sigterm_as_python_stops_it(tmp_path):
    """The handler that says where the script was stopped is the script's process's only:
    a child is forked with SIGTERM's default action. (With a Python handler, a pool's
    worker stopped before it had set itself up after the fork lived on and the script
    waited for it forever: 1 run in 20 or so of the test below on a busy machine.)"""
    forking = script(tmp_path, "forking.py", """\
        import os, signal
        handler = signal.getsignal(signal.SIGTERM)
        pid = os.fork()
        if pid == 0:
            os._exit(0 if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else 3)
        _, status = os.waitpid(pid, 0)
        child_default = os.waitstatus_to_exitcode(status) == 0
        parent_kept = signal.getsignal(signal.SIGTERM) is handler
        """)
    names = run_script(forking)
    assert names["child_default"] and names["parent_kept"]
    assert callable(names["handler"])  # (the handler that speaks, in the script's process)
    assert signal.getsignal(signal.SIGTERM) is not names["handler"]  # and only while it runs


def test_os_exit_is_one_clear_error_and_a_forked_worker_still_exits(tmp_path):
    script(tmp_path, "hard_exit.py", """\
        import multiprocessing
        import os

        from backpropviz import Value

        def square(x):
            return x * x

        if __name__ == "__main__":
            with multiprocessing.get_context("fork").Pool(2) as pool:
                squares = pool.map(square, [1.0, 2.0, 3.0])
            print(squares)
            a = Value(squares[1])
            L = a * a
            os._exit(0)
        """)
    done = command("render", "hard_exit.py", "-o", "hard_exit.svg", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == "[1.0, 4.0, 9.0]\n"  # the workers ran and exited as they should
    # One line, from this process only (not from a worker that went on running).
    assert ours(done.stderr) == [
        "backpropviz: error: hard_exit.py called os._exit(0), which ends the process at "
        "once, so backpropviz had nothing to draw; let the script end normally (or call "
        "sys.exit())"]
    assert not (tmp_path / "hard_exit.svg").exists()


def test_os_exit_is_refused_even_if_the_script_catches_it_and_is_put_back(tmp_path):
    import os

    real_exit = os._exit
    caught = script(tmp_path, "caught.py", """\
        import os
        try:
            os._exit(3)
        except BaseException:
            pass
        """)
    with pytest.raises(ScriptError, match=r"called os._exit\(3\)"):
        run_script(caught)
    assert os._exit is real_exit


@pytest.mark.parametrize("ending", ["sys.exit(0)", "sys.exit()", "exit()", "raise SystemExit"])
def test_a_clean_exit_at_the_end_still_leaves_the_graph(tmp_path, ending):
    clean = script(tmp_path, "clean.py", f"""\
        import sys
        from backpropviz import Value
        a = Value(3.0)
        L = a * a - a
        {ending}
        """)
    G = graph_of_script(clean)
    leaf = next(attrs for _, attrs in G.nodes(data=True) if attrs.get("label") == "a")
    assert leaf["grad"] == 5.0  # dL/da = 2a - 1 at a = 3


def test_raise_systemexit_inside_main_after_backward_draws_that_graph(tmp_path):
    in_main = script(tmp_path, "in_main.py", """\
        from backpropviz import Value

        def main():
            x = Value(-2.0)
            y = (x * x).tanh()
            y.backward()
            raise SystemExit

        if __name__ == "__main__":
            main()
        """)
    G = graph_of_script(in_main)
    x = next(attrs for _, attrs in G.nodes(data=True) if attrs.get("label") == "x")
    # y = tanh(x²): dy/dx = 2x (1 - tanh²(x²)), by hand at x = -2
    assert x["grad"] == pytest.approx(2 * -2.0 * (1 - np.tanh(4.0) ** 2), rel=1e-12)


@pytest.mark.parametrize(("ending", "status"), [("sys.exit(1)", 1), ("sys.exit(4)", 4)])
def test_a_failing_exit_status_is_the_scripts_failure(tmp_path, ending, status):
    failing = script(tmp_path, "failing.py", f"""\
        import sys
        from backpropviz import Value
        L = Value(1.0) * 2
        {ending}
        """)
    with pytest.raises(ScriptError) as raised:
        graph_of_script(failing)
    assert str(raised.value) == (f"{failing} exited with status {status}, so there is no "
                                 "graph to draw")


def test_a_script_that_kills_itself_says_so_and_leaves_no_file(tmp_path):
    killed = script(tmp_path, "killed.py", """\
        import os, signal
        from backpropviz import Value
        L = Value(1.0) * 2
        os.kill(os.getpid(), signal.SIGTERM)
        """)
    done = command("render", "killed.py", "-o", "killed.txt", cwd=tmp_path)
    assert done.returncode == -signal.SIGTERM  # it ends as the signal ends it
    assert ours(done.stderr) == [
        f"backpropviz: error: the script was stopped by SIGTERM at killed.py:"
        f"{line_of(killed, 'os.kill')}, so there is nothing to draw"]
    assert not (tmp_path / "killed.txt").exists()


# ---------------------------------------------------------------- sum and mean's axes

AXES = [None, 0, -1, (0, 2), (-1, -3), (1,), ()]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_sum_and_mean_along_axes_match_finite_differences(reduction, keepdims):
    rng = np.random.default_rng(7)
    X = Tensor(rng.normal(size=(2, 3, 4)), requires_grad=True)
    W = Tensor(rng.normal(size=(2, 3, 4)), requires_grad=True)
    for axis in AXES:
        def loss(X: Tensor, W: Tensor, axis=axis) -> Tensor:
            reduced = getattr(X * W, reduction)(axis=axis, keepdims=keepdims)
            return (reduced * reduced).sum()  # squared, so each entry's gradient differs
        result = gradcheck(loss, [X, W])
        assert result.max_abs_error < 1e-6, (axis, result)  # of gradients of order 1


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_sum_and_mean_along_axes_match_pytorch(reduction, keepdims):
    import torch

    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    for axis in [a for a in AXES if a != ()]:  # PyTorch reads dim=() as all dimensions
        X = Tensor(x, requires_grad=True)
        ours_reduced = getattr(X * Tensor(w), reduction)(axis=axis, keepdims=keepdims)
        (ours_reduced * ours_reduced).sum().backward()
        X_t = torch.tensor(x, requires_grad=True)
        product = X_t * torch.tensor(w)
        if axis is None:  # PyTorch's sum() has no keepdim; a reduction over every dim has
            theirs = getattr(product, reduction)(dim=(0, 1, 2), keepdim=keepdims)
        else:
            theirs = getattr(product, reduction)(dim=axis, keepdim=keepdims)
        (theirs * theirs).sum().backward()
        assert ours_reduced.shape == tuple(theirs.shape), axis
        np.testing.assert_allclose(ours_reduced.data, theirs.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(X.grad, X_t.grad.numpy(), rtol=1e-12)


def test_a_wrong_axis_is_one_sentence():
    X = Tensor(np.ones((2, 3)))
    for axis, message in [(2, r"axis 2 is out of range for shape \(2, 3\)"),
                          ((0, -2), r"axis \(0, -2\) names an axis twice"),
                          (1.0, "an axis is an int or a tuple of ints, got 1.0"),
                          ((0, True), r"an axis is an int or a tuple of ints, got \(0, True\)")]:
        with pytest.raises(EngineError, match=message):
            X.sum(axis=axis)
    with pytest.raises(EngineError, match="keepdims is True or False, got 'yes'"):
        X.mean(0, keepdims="yes")


def _batch_norm_like() -> tuple[Tensor, Tensor]:
    """A lecture's centring step: each row minus its mean, then the columns' sums."""
    X = Tensor([[1.0, 2.0, 3.0], [4.0, -5.0, 6.0]], label="X", requires_grad=True)
    mu = X.mean(axis=-1, keepdims=True)
    mu.label = "mu"
    centred = X - mu
    centred.label = "centred"
    L = (centred * centred).sum(axis=(0, 1))
    L.label = "L"
    L.backward()
    return X, L


def test_the_ir_text_and_figure_show_the_axis_and_keepdims():
    X, L = _batch_norm_like()
    G = to_networkx(L)
    ops = {attrs["op"]: attrs for _, attrs in G.nodes(data=True) if attrs["kind"] == "op"}
    assert (ops["mean"]["axis"], ops["mean"]["keepdims"]) == (-1, True)
    assert ops["sum"]["axis"] == (0, 1) and "keepdims" not in ops["sum"]
    text = render(G, "txt").decode()
    assert "μ = mean(X, axis=-1, keepdims=True)" in text  # (mu is written μ)
    assert "L = sum(centred⊙centred, axis=(0, 1))" in text
    # L = Σ (x - row mean)²: dL/dX = 2 (x - row mean), the mean's share summing to 0.
    centred = X.data - X.data.mean(axis=1, keepdims=True)
    drawn = next(attrs["grad"] for _, attrs in G.nodes(data=True) if attrs.get("label") == "X")
    np.testing.assert_allclose(drawn, 2 * centred, rtol=1e-12, atol=1e-12)
    dot = render(G, "dot").decode()
    assert 'label="mean₋₁"' in dot and 'label="Σ₀,₁"' in dot


def test_axes_and_keepdims_survive_json_and_graphml():
    _, L = _batch_norm_like()
    G = to_networkx(L)
    for H in (from_node_link(json.loads(json.dumps(to_node_link(G)))),
              from_graphml(to_graphml(G))):
        for node, attrs in G.nodes(data=True):
            if attrs["kind"] == "op":
                assert H.nodes[node].get("axis") == attrs.get("axis")
                assert H.nodes[node].get("keepdims") == attrs.get("keepdims")


def test_checks_reference_applies_keepdims():
    _, L = _batch_norm_like()
    G = to_networkx(L)
    assert disagreements(G) == []  # each drawn result is its drawn operands' op
    mean = next(n for n, attrs in G.nodes(data=True) if attrs.get("label") == "mu")
    G.nodes[mean]["data"] = [[2.0], [1.0]]  # the second row's mean is 5/3, not 1
    assert [line.split(":")[0] for line in disagreements(G)] == ["op0 (mean)", "op1 (sub)"]


@pytest.mark.parametrize("collecting", [True, False])
def test_the_cycle_collector_is_as_it_was_after_a_graph_is_read(tmp_path, collecting):
    # The IR is built with Python's cycle collector off (script._collector_paused): a
    # notebook's kernel must find it on again after every cell, drawn or refused, and
    # a program that had it off must still find it off.
    import gc

    from backpropviz.script import GraphTooLargeError

    path = tmp_path / "small.py"
    path.write_text("from backpropviz import Value\na = Value(2.0)\nb = a * a + a\n")
    was_on = gc.isenabled()
    try:
        (gc.enable if collecting else gc.disable)()
        assert graph_of_script(path, ["b"], quiet=True).number_of_nodes() == 5
        assert gc.isenabled() is collecting
        with pytest.raises(GraphTooLargeError):
            graph_of_script(path, ["b"], quiet=True, max_nodes=2)
        assert gc.isenabled() is collecting
    finally:
        (gc.enable if was_on else gc.disable)()
