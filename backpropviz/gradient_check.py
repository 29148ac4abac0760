"""The gradient check: backward's gradients against central finite differences."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from .node import EngineError, Node
from .value import Value

__all__ = ["GradcheckResult", "gradcheck"]


class GradcheckResult(NamedTuple):
    """Largest differences between backward's gradients and finite differences."""

    max_abs_error: float
    max_rel_error: float


def gradcheck(function: Callable[..., Node], inputs: Sequence[Node],
              eps: float = 1e-6) -> GradcheckResult:
    """Compare backward's gradients of ``function(*inputs)`` with central differences.

    ``inputs`` are leaf Values or Tensors; ``function`` builds a fresh graph
    from them and returns a scalar. The inputs' gradients are left as the one
    backward pass made them.
    """
    for node in inputs:
        if not isinstance(node, Node) or not node.is_leaf:
            raise EngineError("gradcheck's inputs must be leaf Values or Tensors")
        node._clear_grad()
    output = function(*inputs)
    if not isinstance(output, Node):
        raise EngineError(f"gradcheck's function must return a Value or Tensor, "
                          f"got {type(output).__name__}")
    output.backward()
    max_abs = max_rel = 0.0
    for node in inputs:
        original = node.data
        # An input the output does not depend on has gradient 0.
        grad = node.grad if node.has_grad else np.zeros(np.shape(original))
        analytic = np.array(grad, dtype=np.float64).ravel()
        flat = np.array(original, dtype=np.float64).ravel()
        for i in range(flat.size):
            estimates = []
            try:
                for step in (eps, -eps):
                    nudged = flat.copy()
                    nudged[i] += step
                    node.data = (float(nudged[0]) if isinstance(node, Value)
                                 else nudged.reshape(np.shape(original)))
                    estimates.append(_scalar(function(*inputs)))
            finally:
                node.data = original
            numeric = (estimates[0] - estimates[1]) / (2 * eps)
            error = abs(numeric - analytic[i])
            scale = max(abs(numeric), abs(analytic[i]), 1e-12)
            # np.maximum, not max: a nan error must show, not be skipped.
            max_abs = float(np.maximum(max_abs, error))
            max_rel = float(np.maximum(max_rel, error / scale))
    return GradcheckResult(max_abs, max_rel)


def _scalar(node: Node) -> float:
    return float(np.asarray(node.data).reshape(()))
