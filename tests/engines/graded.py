"""A neuron whose input is used twice, in the engine named by $ENGINE (default Correct)."""

import os

import students

Value = getattr(students, os.environ.get("ENGINE", "Correct"))

x = Value(0.5, label="x")
w = Value(-1.5, label="w")
b = Value(0.8, label="b")
z = x * w + b
h = z.tanh()
y = h * x  # x is used twice: its gradient has two shares
L = y + h  # and so is h
L.backward()
