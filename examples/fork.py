"""Gradients add at forks: a is used twice by b, and b twice by c."""

from backpropviz import Value

a = Value(3.0)
b = a + a  # two edges from a: each sends back dc/db, and they add up
c = b * b  # dc/db = b + b = 2b
c.backward()

print(f"c = {c.data}, dc/db = {b.grad}, dc/da = {a.grad}")
