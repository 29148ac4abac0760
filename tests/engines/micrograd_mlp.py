"""A few training steps of micrograd's MLP on three points (micrograd's nn, as in its demo)."""

import random

from micrograd.nn import MLP

random.seed(1)
model = MLP(2, [3, 1])
xs = [[2.0, 3.0], [3.0, -1.0], [0.5, 1.0]]
ys = [1.0, -1.0, 1.0]
for _ in range(5):
    loss = sum((model(x) - y) ** 2 for x, y in zip(xs, ys, strict=True))
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data -= 0.05 * p.grad
