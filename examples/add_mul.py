"""The book's worked example: e = (a + b) c at a = 2, b = 1, c = -3."""

from backpropviz import Value

a = Value(2.0)
b = Value(1.0)
c = Value(-3.0)
d = a + b  # the add node passes the gradient through unchanged
e = d * c  # the multiply node scales it by the other input
e.backward()

print(f"e = {e.data}, de/da = {a.grad}, de/db = {b.grad}, de/dc = {c.grad}")
