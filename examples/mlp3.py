"""A three-layer MLP on one example, in matrix form: 2 inputs, two hidden layers
of 3 ReLU units, one output, squared error.

The size of network a lecture draws after the book's one-hidden-layer example:
three weight matrices and three biases, each gradient read off its box.
"""

from backpropviz import Tensor

x, y = Tensor([0.5, -1.0]), 1.0
W1 = Tensor([[0.2, -0.4], [0.7, 0.1], [-0.5, 0.3]], requires_grad=True)
b1 = Tensor([0.1, 0.0, -0.1], requires_grad=True)
W2 = Tensor([[0.3, -0.2, 0.5], [-0.6, 0.4, 0.1], [0.2, 0.2, -0.3]], requires_grad=True)
b2 = Tensor([0.0, 0.1, 0.0], requires_grad=True)
W3 = Tensor([[0.4, -0.5, 0.6]], requires_grad=True)
b3 = Tensor([0.05], requires_grad=True)

h1 = (W1 @ x + b1).relu()
h2 = (W2 @ h1 + b2).relu()
o = W3 @ h2 + b3
L = ((o - y) ** 2).sum()
L.backward()

print(f"L = {L.item():.4f}")
print(f"dL/dW3 = {W3.grad}\ndL/dW1 =\n{W1.grad}")
