"""backpropviz: record a computation and its backward pass, then draw and animate it."""

from .engine import EngineError, GradcheckResult, Tensor, Value, gradcheck, saved_for_backward
from .ir import (
    IRError,
    backward_steps,
    from_graphml,
    from_node_link,
    to_graphml,
    to_networkx,
    to_node_link,
    validate,
)

__version__ = "0.1.0"

__all__ = [
    "EngineError",
    "GradcheckResult",
    "IRError",
    "Tensor",
    "Value",
    "__version__",
    "backward_steps",
    "from_graphml",
    "from_node_link",
    "gradcheck",
    "saved_for_backward",
    "to_graphml",
    "to_networkx",
    "to_node_link",
    "validate",
]
