"""What a running script calls backward() on, and the names its functions give the values.

A script that does its work inside ``main()`` leaves no graph in its global
names; the root of its last ``backward()`` call is that graph, and the local
names of the functions that made the call name its values. The engine and the
PyTorch recording tell the watch of each call (``engine.backward_listeners``);
another engine's ``backward`` method is seen by a profile hook while the script
runs, which has foreign_nodes.OBSERVED watch that call as it runs and note the
nodes made inside operator methods.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from . import engine, foreign
from .foreign_nodes import OBSERVED

__all__ = ["Watch", "watching"]

_PACKAGE = os.path.dirname(os.path.realpath(__file__))


class Watch:
    """The last backward() call a script made: its roots and the names around it."""

    def __init__(self, script: str | os.PathLike | None,
                 on_pass: Callable[[Watch], None] | None = None) -> None:
        # None: code that is not a file (a notebook cell), whose top level is any <module>.
        self.script = None if script is None else os.path.realpath(script)
        self.on_pass = on_pass  # told once each backward() is over (a training run's record)
        self.calls = 0
        self.graphs = 0  # the calls on roots other than the last call's (a loop's passes)
        self.roots: tuple = ()
        # The local names of the script's functions at the last call, innermost first,
        # and its global names as they were then.
        self.local_names: list[dict[str, Any]] = []
        self.global_names: dict[str, Any] = {}

    def heard(self, *roots: Any) -> None:
        """A backward() call from ``roots`` (called by the engine and the torch recording)."""
        self.called_from(sys._getframe(1), roots)

    def called_from(self, frame: FrameType | None, roots: tuple) -> None:
        # Only the last call is kept: a training loop's earlier graphs can be freed.
        self.calls += 1
        if len(roots) != len(self.roots) or any(
                a is not b for a, b in zip(roots, self.roots, strict=True)):
            self.graphs += 1
        self.roots = roots
        self.local_names, self.global_names = self._frames_names(frame)

    def done(self, *roots: Any) -> None:
        """The backward() call last heard is over: tell ``on_pass``, if any."""
        if self.on_pass is not None:
            self.on_pass(self)

    def names(self, namespace: dict[str, Any]) -> dict[str, Any]:
        """The script's global names, then the names its functions used at the last call."""
        merged = dict(namespace)
        for names in self.local_names:
            for name, obj in names.items():
                merged.setdefault(name, obj)
        return merged

    def _frames_names(self, frame: FrameType | None) -> tuple[list[dict[str, Any]], dict]:
        """The locals of the frames from the caller of backward() out to the script's
        top level, leaving out backpropviz's and torch's; and the top level's names."""
        torch = sys.modules.get("torch")
        skipped = [_PACKAGE]
        if torch is not None and getattr(torch, "__file__", None):
            skipped.append(os.path.dirname(os.path.realpath(torch.__file__)))
        found: list[dict[str, Any]] = []
        while frame is not None:
            code = frame.f_code
            filename = os.path.realpath(code.co_filename)
            if code.co_name == "<module>" and self.script in (None, filename):
                break
            if not any(filename.startswith(folder + os.sep) for folder in skipped):
                found.append(dict(frame.f_locals))
            frame = frame.f_back
        else:
            return [], {}  # not a call the script made (nothing of the script on the stack)
        return found, frame.f_globals


@contextlib.contextmanager
def watching(script: str | os.PathLike | None, *, other_engines: bool = False,
             on_pass: Callable[[Watch], None] | None = None) -> Iterator[Watch]:
    """Within the block, every backward() call is kept by the Watch yielded, which tells
    ``on_pass`` once each is over.

    With ``other_engines``, a ``backward`` method of a micrograd-style class is
    seen too, through ``sys.setprofile`` (which slows the script's Python calls
    by about a third, so it is only asked for scripts that use neither this
    engine nor PyTorch; it is left out if a profiler is already running).
    """
    watch = Watch(script, on_pass)
    OBSERVED.forget()
    engine.backward_listeners.append(watch.heard)
    engine.backward_done_listeners.append(watch.done)
    hook = _backward_hook(watch) if other_engines and sys.getprofile() is None else None
    if hook is not None:
        sys.setprofile(hook)
    try:
        yield watch
    finally:
        if hook is not None:
            sys.setprofile(None)
        engine.backward_listeners.remove(watch.heard)
        engine.backward_done_listeners.remove(watch.done)


def _backward_hook(watch: Watch) -> Any:
    """A profile function noting the outermost call of a node's ``backward`` method (a
    recursive backward calls itself on every node; only the first call is the root's),
    which foreign.OBSERVED watches as it runs, and the nodes operators make."""
    active: list[FrameType] = []
    observed = OBSERVED

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        name = frame.f_code.co_name
        if name == "__init__" and event == "call":
            observed.init_called(frame)
        if name != "backward":
            return
        if event == "call":
            node = frame.f_locals.get("self")
            if foreign.looks_like_node(node):
                if not active:
                    watch.called_from(frame.f_back, (node,))
                    observed.backward_called(node)
                active.append(frame)
        elif event == "return" and active and active[-1] is frame:
            active.pop()
            if not active:
                observed.backward_returned()
                watch.done()

    return hook
