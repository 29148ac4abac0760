"""backpropviz: record a computation and its backward pass, then draw and animate it."""

from .diagram import Diagram, draw, render_steps
from .engine import EngineError, GradcheckResult, Tensor, Value, gradcheck, saved_for_backward
from .errors import BackpropvizError, DrawError, OutputError
from .groups import group
from .html import Page, render_html, step_through, to_html
from .ir import (
    IRError,
    from_graphml,
    from_node_link,
    to_graphml,
    to_networkx,
    to_node_link,
    validate,
)
from .script import ScriptError, graph_of_script
from .steps import backward_steps, gradient_history
from .torch_import import TorchImportError, capture, from_torch

__version__ = "0.1.0"

__all__ = [
    "BackpropvizError",
    "Diagram",
    "DrawError",
    "EngineError",
    "GradcheckResult",
    "IRError",
    "OutputError",
    "Page",
    "ScriptError",
    "Tensor",
    "TorchImportError",
    "Value",
    "__version__",
    "backward_steps",
    "capture",
    "draw",
    "from_graphml",
    "from_node_link",
    "from_torch",
    "gradcheck",
    "gradient_history",
    "graph_of_script",
    "group",
    "render_html",
    "render_steps",
    "saved_for_backward",
    "step_through",
    "to_graphml",
    "to_html",
    "to_networkx",
    "to_node_link",
    "validate",
]


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext backpropviz``: the ``%%backpropviz`` cell magic (backpropviz.notebook)."""
    from .notebook import load_ipython_extension as load

    load(ipython)
