"""backpropviz: record a computation and its backward pass, then draw and animate it.

The names a user needs are here; each loads its module on first use, so
``import backpropviz`` (and ``backpropviz --version``) is quick::

    from backpropviz import Value, write
    a, b = Value(2.0), Value(-3.0)
    L = a * b + b
    L.backward()
    write(L, "L.svg", names=locals())

Everything else is importable from the module that owns it (listed in the
docs' internals page); the names this package exported before are still
found here for one release, with a DeprecationWarning that says where.
"""

from __future__ import annotations

import warnings
from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# Each public name and the module that defines it.
_PUBLIC = {
    "Value": "engine",
    "Tensor": "engine",
    "gradcheck": "engine",
    "group": "groups",
    "draw": "diagram",
    "write": "output",
    "render": "output",
    "write_steps": "output",
    "Options": "options",
    "graph_of_script": "script",
    "capture": "torch_import",
    "from_torch": "torch_import",
    "BackpropvizError": "errors",
}
# The names exported before this release, and where they live now.
_MOVED = {
    "Diagram": "diagram",
    "render_steps": "diagram",
    "DrawError": "errors",
    "OutputError": "errors",
    "EngineError": "engine",
    "GradcheckResult": "engine",
    "saved_for_backward": "engine",
    "Page": "html",
    "render_html": "html",
    "step_through": "html",
    "to_html": "html",
    "IRError": "ir",
    "from_graphml": "ir",
    "from_node_link": "ir",
    "to_graphml": "ir",
    "to_networkx": "ir",
    "to_node_link": "ir",
    "validate": "ir",
    "ScriptError": "script",
    "backward_steps": "steps",
    "gradient_history": "steps",
    "TorchImportError": "torch_import",
}

__all__ = ["BackpropvizError", "Options", "Tensor", "Value", "__version__", "capture", "draw",
           "from_torch", "gradcheck", "graph_of_script", "group", "nn", "render", "write",
           "write_steps"]


def __getattr__(name: str) -> Any:
    """A public name, loaded from its module on first use (and kept)."""
    if name == "nn":
        return import_module(".nn", __name__)
    if name in _MOVED:
        warnings.warn(f"backpropviz.{name} is deprecated and will be removed: import it "
                      f"from backpropviz.{_MOVED[name]}", DeprecationWarning, stacklevel=2)
        return getattr(import_module(f".{_MOVED[name]}", __name__), name)
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_PUBLIC[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext backpropviz``: the ``%%backpropviz`` cell magic (backpropviz.notebook)."""
    from .notebook import load_ipython_extension as load

    load(ipython)
