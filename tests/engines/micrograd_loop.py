"""Twenty steps of gradient descent on a line fit, written with micrograd."""

from micrograd.engine import Value

w = Value(0.5)
b = Value(0.0)
for _ in range(20):
    loss = (w * 3.0 + b - 2.0) ** 2
    w.grad = 0.0
    b.grad = 0.0
    loss.backward()
    w.data -= 0.01 * w.grad
    b.data -= 0.01 * b.grad
