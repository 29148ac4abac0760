"""A scalar recurrence over $STEPS inputs (default 5), written with micrograd's own Value
(which has relu, not tanh)."""

import os

from micrograd.engine import Value

steps = int(os.environ.get("STEPS", "5"))
xs = [0.5, 1.0, 2.0, 0.25, 0.5, 1.5, 2.0][:steps] + [0.1] * max(0, steps - 7)
w = Value(0.9)
u = Value(0.7)
h = Value(0.3)
for x in xs:
    h = (w * h + u * x).relu()
loss = h * h
loss.backward()
