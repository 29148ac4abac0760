"""The book's worked example e = (a + b) c, forward and backward.

    manim -ql scenes/worked_example.py WorkedExample
"""

from pathlib import Path

from backpropviz.animate import BackpropScene

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class WorkedExample(BackpropScene):
    """Forward: d = 3, e = -9. Backward: the seed 1 at e; the multiply node
    scales it by the other input (de/dd = c = -3, de/dc = d = 3); the add
    node passes -3 through to a and b."""

    example = EXAMPLES / "add_mul.py"
    roots = ("e",)
