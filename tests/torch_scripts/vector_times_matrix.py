"""A row of inputs times a weight matrix, x @ W (a 1-D tensor first), and W @ v the other way."""

import torch

x = torch.tensor([1.0, 2.0])
W = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], requires_grad=True)
u = torch.tensor([1.0, -1.0], requires_grad=True)
v = torch.tensor([3.0, -2.0, 0.5], requires_grad=True)
y = x @ W  # (2,) @ (2, 3): the gradient of W is the outer product x gᵀ
s = u @ W @ v  # a vector, a matrix and a vector: a scalar
L = (y * y).sum() + s
L.backward()
