"""A scalar RNN in a student's own Value class whose backward() sorts the graph with a
stack (tests/engines/tuple_engine.py: the last child pushed is visited first): its order
mixes the repetitions, each one's u·x share coming after the earlier repetitions'."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "engines"))
from tuple_engine import Value

w = Value(0.5)
u = Value(-1.2)
h = Value(0.0)
for x in [1.0, -0.5, 0.8, 0.3]:
    h = (w * h + u * Value(x)).tanh()
loss = h * h
loss.backward()
