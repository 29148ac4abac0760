"""The seed's MLP with the ReLU applied in place: h holds W1 @ x until relu_ overwrites it."""

import torch

x, y = torch.tensor([1.0, 2.0]), 0
W1 = torch.tensor([[1.0, -1.0], [0.0, 1.0]], requires_grad=True)
W2 = torch.tensor([[2.0, -1.0]], requires_grad=True)
h = W1 @ x
h.relu_()
o = W2 @ h
L = ((o - y) ** 2).sum() / 2
L.backward()
