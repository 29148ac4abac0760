"""A scalar RNN with a bias, h = tanh(w·h + u·x + b), in the lecture's Value class (its
children in a set), each input wrapped in a Value as students do."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "engines"))
from lecture import Value

w = Value(0.5)
u = Value(-1.2)
b = Value(0.1)
h = Value(0.0)
for x in [1.0, -0.5, 0.8, 0.3]:
    h = (w * h + u * Value(x) + b).tanh()
loss = h * h
loss.backward()
