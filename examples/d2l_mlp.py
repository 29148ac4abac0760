"""The book's one-hidden-layer MLP worked example, in matrix form.

ReLU, squared-error loss, no bias, lambda = 0: the first hidden unit is dead
(z1 = -1), so the top row of dL/dW1 is zero.
"""

from backpropviz import Tensor

x, y = Tensor([1.0, 2.0]), 0
W1 = Tensor([[1.0, -1.0], [0.0, 1.0]], requires_grad=True)
W2 = Tensor([[2.0, -1.0]], requires_grad=True)
z = W1 @ x
h = z.relu()
o = W2 @ h
L = ((o - y) ** 2).sum() / 2
L.backward()

print(f"L = {L.item()}, dL/dW2 = {W2.grad}, dL/dh = {h.grad}")
print(f"dL/dz = {z.grad}, dL/dW1 =\n{W1.grad}")
