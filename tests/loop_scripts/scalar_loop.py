"""A scalar recurrence over $STEPS inputs (default 5), in backpropviz's own Value."""

import os

from backpropviz import Value

steps = int(os.environ.get("STEPS", "5"))
xs = [0.5, -1.0, 2.0, 0.25, -0.5, 1.5, -2.0][:steps] + [0.1] * max(0, steps - 7)
w = Value(0.8, label="w")
u = Value(-0.6, label="u")
h = Value(0.0, label="h0")
for x in xs:
    h = (w * h + u * x).tanh()
loss = h * h
loss.backward()
