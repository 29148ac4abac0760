"""Logistic regression written out by hand, as a lecture writes it: p forks into log(p) and
1 − p, whose shares are vectors."""

import torch

X = torch.tensor([[1.0, 2.0], [-1.0, 0.5], [0.5, -1.5], [2.0, 1.0]])
y = torch.tensor([1.0, 0.0, 0.0, 1.0])
w = torch.tensor([0.3, -0.2], requires_grad=True)
b = torch.tensor(0.1, requires_grad=True)
p = torch.sigmoid(X @ w + b)
loss = -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
loss.backward()
