"""h = tanh(w·h + u·x) over $STEPS inputs (default 12) in a student's engine that keeps
each result's children in a set: its topological sort, and so its backward order,
follows the set's order, which mixes the repetitions' shares of u."""

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engines"))
from students import Correct as Value

steps = int(os.environ.get("STEPS", "12"))
w, u = Value(0.5, label="w"), Value(-0.8, label="u")
h = Value(0.1, label="h0")
for t in range(steps):
    h = (w * h + u * math.sin(0.3 * t)).tanh()
loss = h
loss.label = "loss"
loss.backward()
