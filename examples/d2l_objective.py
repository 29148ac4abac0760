"""The regularised objective J = L + s, with s = lambda/2 (||W1||² + ||W2||²).

With lambda = 0.1, W1 and W2 reach J along two paths, through the loss and
through the penalty, and the gradients arriving along each path add up:
dJ/dW2 = (dJ/do) hᵀ + lambda W2.
"""

from backpropviz import Tensor

lambd = 0.1
x, y = Tensor([1.0, 2.0]), 0
W1 = Tensor([[1.0, -1.0], [0.0, 1.0]], requires_grad=True)
W2 = Tensor([[2.0, -1.0]], requires_grad=True)
z = W1 @ x
h = z.relu()
o = W2 @ h
L = ((o - y) ** 2).sum() / 2
s = lambd / 2 * (W1.sqnorm() + W2.sqnorm())
J = L + s
J.backward()

print(f"J = {J.item():g}, L = {L.item():g}, s = {s.item():g}")
print(f"dJ/dW2 = {W2.grad}, dJ/dW1 =\n{W1.grad}")
