"""The command line run by ``cli.main`` in the test's own process, as the entry point runs it.

A process of its own adds only its start-up (Python, numpy, networkx; PyTorch's two
seconds for a torch script) to what the command does. The entry point itself, its
exit statuses on a signal, pipes and a script's own traceback are tested through a
real process (tests/test_cli.py's ``run``); everything else the command does is the
same here: the same parser, the same writer, the same one line on stderr.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path

from backpropviz import cli


def run_cli(*args: str | Path, cwd: Path | str | None = None, env: dict | None = None,
            text: bool = False) -> subprocess.CompletedProcess:
    """``backpropviz ARGS`` in this process, in ``cwd`` and with ``env`` (the whole
    environment, as ``subprocess.run`` takes it) for the call: its exit status and
    what it wrote to stdout and stderr (bytes, or str with ``text``)."""
    argv = [str(arg) for arg in args]
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    here, environment = os.getcwd(), dict(os.environ)
    try:
        if cwd is not None:
            os.chdir(cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            status = cli.main(argv)
            stdout.flush()
            stderr.flush()
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environment)
    written, said = out.getvalue(), err.getvalue()
    if text:
        return subprocess.CompletedProcess(["backpropviz", *argv], status,
                                           written.decode(), said.decode())
    return subprocess.CompletedProcess(["backpropviz", *argv], status, written, said)
