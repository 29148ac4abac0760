"""Many scripts in one call: each in a child forked from this process, several at a time.

A fork starts in milliseconds with everything this process imported already
loaded (numpy, networkx, torch), and gives each script the fresh state it
would have under ``python SCRIPT`` (its modules, working directory, argv).
Where fork is missing (Windows), the scripts run one after another here.
"""

from __future__ import annotations

import contextlib
import functools
import io
import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, TextIO

from .errors import UsageError
from .files import make_folder

__all__ = ["Outcome", "Task", "default_jobs", "draw_many", "run_all"]


@dataclass(frozen=True)
class Task:
    """One job: its ``label`` (the script), and ``run``, which returns an exit status
    and prints what went wrong to stderr."""

    label: str
    run: Callable[[], int]
    done: str = ""  # what a success reports (the file written)


@dataclass(frozen=True)
class Outcome:
    task: Task
    status: int
    output: str  # what the job printed (its script's too), shown if it failed
    seconds: float

    @property
    def ok(self) -> bool:
        return self.status == 0


def run_all(tasks: Sequence[Task], jobs: int, report: TextIO | None = None) -> list[Outcome]:
    """Run every task, at most ``jobs`` at a time; a line on ``report`` as each ends.

    A failing task does not stop the others. Returns the outcomes in the
    tasks' order.
    """
    report = report or sys.stderr
    if "fork" not in multiprocessing.get_all_start_methods():
        outcomes = {}
        for index, task in enumerate(tasks):
            outcomes[index] = _run_here(task)
            _line(report, len(outcomes), len(tasks), outcomes[index])
        return [outcomes[i] for i in range(len(tasks))]
    return _run_forked(tasks, max(1, jobs), report)


def _run_forked(tasks: Sequence[Task], jobs: int, report: TextIO) -> list[Outcome]:
    context = multiprocessing.get_context("fork")
    waiting = list(enumerate(tasks))
    running: dict[Any, tuple[int, Any, Connection, float]] = {}  # sentinel -> job
    outcomes: dict[int, Outcome] = {}
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                index, task = waiting.pop(0)
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_child, args=(task, send, jobs), daemon=True)
                process.start()
                send.close()
                running[process.sentinel] = (index, process, receive, time.monotonic())
            connections = {job[2]: sentinel for sentinel, job in running.items()}
            for ready in wait(list(connections)):
                sentinel = connections[ready]
                index, process, receive, started = running.pop(sentinel)
                try:
                    status, output = receive.recv()
                except EOFError:  # the child died without a word (a crash, a kill)
                    process.join()
                    status, output = 1, (f"backpropviz: error: the run stopped with exit "
                                         f"code {process.exitcode}\n")
                receive.close()
                process.join()
                outcome = Outcome(tasks[index], status, output, time.monotonic() - started)
                outcomes[index] = outcome
                _line(report, len(outcomes), len(tasks), outcome)
    finally:
        for _, process, receive, _ in running.values():
            process.terminate()
            process.join()
            receive.close()
    return [outcomes[i] for i in range(len(tasks))]


def _child(task: Task, send: Connection, jobs: int) -> None:
    """In the forked child: run the task with its output kept, send status and output."""
    if jobs > 1 and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)  # the cores are shared out by the jobs
    status, output = _captured(task)
    send.send((status, output))
    send.close()


def _run_here(task: Task) -> Outcome:
    started = time.monotonic()
    status, output = _captured(task)
    return Outcome(task, status, output, time.monotonic() - started)


def _captured(task: Task) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        try:
            status = task.run()
        except BaseException:  # what the task does not handle is still its failure
            traceback.print_exc()
            status = 1
    return status, buffer.getvalue()


def _line(report: TextIO, finished: int, total: int, outcome: Outcome) -> None:
    """``[2/5] ok     fork.py -> out/fork.svg (0.4 s)``, or the failure and its reason."""
    width = len(str(total))
    head = f"[{finished:>{width}}/{total}]"
    if outcome.ok:
        print(f"{head} ok     {outcome.task.label} -> {outcome.task.done} "
              f"({outcome.seconds:.1f} s)", file=report, flush=True)
        return
    lines = outcome.output.rstrip("\n").splitlines() or ["(no message)"]
    for line in lines[:-1]:  # what the script printed before it failed: its traceback
        print(f"{' ' * len(head)}   | {line}", file=report)
    reason = lines[-1].removeprefix("backpropviz: error: ")
    print(f"{head} FAILED {outcome.task.label}: {reason}", file=report, flush=True)


def default_jobs() -> int:
    """As many jobs as cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def draw_many(scripts: Sequence[str], folder: Path, fmt: str,
              draw_one: Callable[[str, Path], int], jobs: int | None = None) -> int:
    """Each script drawn into ``folder`` as ``<its name>.<fmt>`` by ``draw_one(script,
    output)``, ``jobs`` at a time; a line as each ends and one at the end. Returns 1 if
    any failed, else 0."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"several scripts are drawn into a folder, and {folder} is a file")
    stems: dict[str, str] = {}
    for name in scripts:
        other = stems.setdefault(Path(name).stem, name)
        if other != name:
            raise UsageError(f"{other} and {name} would both be drawn as "
                             f"{Path(name).stem}.{fmt}: draw them in separate calls")
    make_folder(folder)
    _preload(scripts)
    outputs = {name: folder / f"{Path(name).stem}.{fmt}" for name in scripts}
    tasks = [Task(name, functools.partial(draw_one, name, output), str(output))
             for name, output in outputs.items()]
    jobs = min(jobs or default_jobs(), len(tasks))
    started = time.monotonic()
    outcomes = run_all(tasks, jobs)
    failed = [outcome.task.label for outcome in outcomes if not outcome.ok]
    print(f"backpropviz: drew {len(tasks) - len(failed)} of {len(tasks)} scripts into "
          f"{folder}/ in {time.monotonic() - started:.1f} s ({jobs} at a time)"
          + (f"; failed: {', '.join(failed)}" if failed else ""), file=sys.stderr)
    return 1 if failed else 0


def _preload(scripts: Sequence[str]) -> None:
    """Import torch once here, before the scripts are forked, if one of them uses it."""
    from .script import imports_torch

    for name in scripts:
        with contextlib.suppress(OSError):
            if imports_torch(Path(name).read_text(encoding="utf-8", errors="replace")):
                with contextlib.suppress(ImportError):
                    import torch  # noqa: F401
                return
