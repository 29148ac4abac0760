"""A micrograd-style neuron: o = tanh(x1 w1 + x2 w2 + b)."""

from backpropviz import Value

x1, x2 = Value(2.0), Value(0.0)
w1, w2 = Value(-3.0, requires_grad=True), Value(1.0, requires_grad=True)
b = Value(6.8813735870195432, requires_grad=True)
n = x1 * w1 + x2 * w2 + b
o = n.tanh()
o.backward()

print(f"o = {o.data:.4f}, do/dw1 = {w1.grad:.4f}, do/dw2 = {w2.grad:.4f}, do/db = {b.grad:.4f}")
