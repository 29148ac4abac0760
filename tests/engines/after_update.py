"""One step of gradient descent after backward(), as every training loop has it."""

from lecture import Value

w = Value(0.5, label="w")
b = Value(0.1, label="b")
loss = (w * 2.0 + b + -1.0).tanh() * 3.0
loss.backward()
w.data -= 0.1 * w.grad
b.data -= 0.1 * b.grad
