"""The book's figure 4.3.1: the computational graph of the regularised objective.

J = L + s, where the loss L = l(o, y) and the penalty s = λ/2 (‖W1‖² + ‖W2‖²)
are each drawn as one operator, as the book draws them: group() names the
ops inside. Draw it as the book does, from the lower left to the upper right,
names only:

    backpropviz render examples/d2l_figure.py --rankdir book --symbolic

and with its numbers, the same figure with values and gradients:

    backpropviz render examples/d2l_figure.py --rankdir book
"""

from backpropviz import Tensor, group

lambd = 0.1
x, y = Tensor([1.0, 2.0]), 0
W1 = Tensor([[1.0, -1.0], [0.0, 1.0]], requires_grad=True)
W2 = Tensor([[2.0, -1.0]], requires_grad=True)

z = W1 @ x
h = z.relu()
o = W2 @ h
with group("l"):
    L = ((o - y) ** 2).sum() / 2
with group("s"):
    s = lambd / 2 * (W1.sqnorm() + W2.sqnorm())
J = L + s
J.backward()

print(f"J = {J.item():g}, L = {L.item():g}, s = {s.item():g}")
print(f"dJ/dW2 = {W2.grad}, dJ/dW1 =\n{W1.grad}")
