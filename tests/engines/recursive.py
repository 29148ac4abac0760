"""A neuron of two inputs whose output is used twice, in the engine that recurses
without a topological order (students.Recursive): its weighted sum is a chain of +."""

from students import Recursive as Value

x1, x2 = Value(1.5, label="x1"), Value(-0.5, label="x2")
w1, w2, b = Value(0.4, label="w1"), Value(0.9, label="w2"), Value(0.1, label="b")
h = (x1 * w1 + x2 * w2 + b).tanh()
y = h * h + h
y.backward()
