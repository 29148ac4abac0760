"""The reverse sweep through the book's one-hidden-layer MLP, in matrix form.

    manim -ql scenes/d2l_mlp_sweep.py MLPBackwardSweep
"""

from pathlib import Path

from backpropviz.animate import BackpropScene

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class MLPBackwardSweep(BackpropScene):
    """The forward values are all in place; the seed 1 at L travels back
    through the loss, W2 (matmul: multiply by the transpose), the ReLU (a
    gate) and W1, in the order the engine's backward pass ran."""

    example = EXAMPLES / "d2l_mlp.py"
    roots = ("L",)
    phase = "backward"
