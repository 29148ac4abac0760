"""J = L + s: W2 reaches the objective along two paths, and their gradients add.

    manim -ql scenes/two_paths.py TwoPathsIntoW2
"""

from pathlib import Path

from backpropviz.animate import BackpropScene

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class TwoPathsIntoW2(BackpropScene):
    """First the two ways W2 reaches J (through the prediction o and the loss
    L, and through the penalty s); then the backward sweep, where the second
    contribution to dJ/dW2 is added to the first: (dJ/do) hᵀ + λ W2."""

    example = EXAMPLES / "d2l_objective.py"
    roots = ("J",)
    phase = "backward"

    def construct(self) -> None:
        self.show_graph()
        self.trace_paths(self.node_named("W2"))
        self.show_values()
        self.play_backward()
        self.point_out([self.node_named("W2")], "dJ/dW2 = (dJ/do) hᵀ + λ W2: "
                                                "the two paths' gradients, added")
        self.show_overview()
        self.wait(self.t(2))
