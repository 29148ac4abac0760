"""A non-scalar output and no backward: there is no single number to seed backward with."""

import torch

W = torch.tensor([[1.0, -1.0], [0.0, 1.0]], requires_grad=True)
x = torch.tensor([1.0, 2.0])
z = W @ x
