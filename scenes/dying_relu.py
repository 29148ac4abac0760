"""The dying ReLU: a unit whose input is negative passes no gradient back.

    manim -ql scenes/dying_relu.py DyingReLU
"""

from pathlib import Path

from backpropviz.animate import BackpropScene

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class DyingReLU(BackpropScene):
    """The book's MLP one scalar per number: z1 = -1, so the first ReLU is
    dead and its weights w1_11, w1_12 get a zero gradient: no signal, no
    learning."""

    example = EXAMPLES / "d2l_mlp_scalar.py"
    roots = ("L",)
    phase = "backward"

    def construct(self) -> None:
        self.show_graph()
        self.show_values()
        self.play_backward()
        dead_unit = [self.node_named(name) for name in ("z1", "w1_11", "w1_12")]
        self.point_out(dead_unit, "z1 = −1 < 0: the ReLU is dead, so w1_11 and w1_12 "
                                  "get gradient 0 and never learn")
        self.show_overview()
        self.wait(self.t(2))
