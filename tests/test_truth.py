"""Every number drawn is one the engine held: running sums, repeated passes, signs of zero."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from backpropviz import Tensor, Value, backward_steps, gradient_history, to_networkx


def same_float(a: float, b: float) -> bool:
    """Equal to the last bit, the sign of a zero included."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def random_graph(seed: int) -> Value:
    """A random expression with forks (values used several times), signed zeros among them."""
    rng = random.Random(seed)
    values = [Value(rng.choice([0.0, -0.0, 0.1, -0.3, 0.7, 1.3, -2.1, 3.7]))
              for _ in range(rng.randint(2, 5))]
    for _ in range(rng.randint(3, 14)):
        a, b = rng.choice(values), rng.choice(values)  # may be the same value twice
        kind = rng.randrange(5)
        values.append(a + b if kind == 0 else a * b if kind == 1 else a - b if kind == 2
                      else a.relu() if kind == 3 else a.tanh())
    return values[-1]


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("passes", [1, 2, 3])
def test_the_last_running_sum_is_the_gradient_drawn(seed, passes):
    root = random_graph(seed)
    for _ in range(passes):
        root.backward()
    G = to_networkx(root)
    history = gradient_history(G)
    steps = backward_steps(G)
    final = steps[-1].grads if steps else G.graph["seeds"]
    for node, attrs in G.nodes(data=True):
        if attrs["kind"] != "value" or attrs["grad"] is None or node not in history:
            continue
        assert same_float(history[node][-1], attrs["grad"]), node
        assert same_float(final[node], attrs["grad"]), node


def test_each_running_sum_is_what_the_engine_held_after_that_contribution():
    # dL/dw = x + 2w: w gets 2 + 2 from q = w·w, then 3 from p = w·x.
    w, x = Value(2.0), Value(3.0)
    p = w * x
    q = w * w
    L = p + q
    L.backward()
    G = to_networkx(L, names=locals())
    w_id = next(node for node, label in G.nodes(data="label") if label == "w")
    runs = sorted(G.edges[edge]["running"] for edge in G.out_edges(w_id, keys=True))
    assert runs == [2.0, 4.0, 7.0]
    assert gradient_history(G)[w_id] == [4.0, 7.0]


def test_repeated_passes_are_said_on_the_picture():
    x = Value(3.0)
    y = x * x
    y.backward()
    y.backward()
    G = to_networkx(y)
    assert G.nodes["v0"]["grad"] == 12.0  # accumulated, as in PyTorch
    assert "the sum over the 2 backward passes" in G.graph["notes"][0]


def test_a_tensor_keeps_minus_zero_as_its_first_contribution():
    W = Tensor([[-0.0, 1.0]], requires_grad=True)
    x = Tensor([0.0, 2.0])
    out = (W @ x).sum()
    out.backward()
    G = to_networkx(out)
    W_running = [G.edges[e]["running"] for e in G.out_edges("v0", keys=True)]
    assert W_running == [G.nodes["v0"]["grad"]]
    assert np.signbit(np.asarray(G.nodes["v0"]["grad"])).tolist() == np.signbit(W.grad).tolist()
