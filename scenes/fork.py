"""Gradients add at forks: a value used twice collects both contributions (+=).

    manim -ql scenes/fork.py GradientAccumulation
"""

from pathlib import Path

from backpropviz.animate import BackpropScene

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class GradientAccumulation(BackpropScene):
    """b = a + a and c = b * b: each edge out of a fork carries its own
    contribution back, and the value's gradient is their sum: dc/db = 6 + 6,
    dc/da = 12 + 12."""

    example = EXAMPLES / "fork.py"
    roots = ("c",)
