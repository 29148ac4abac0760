"""A loop that never resets .grad: each pass adds to what the earlier ones left."""

import torch

w = torch.tensor(1.5, requires_grad=True)
x = torch.tensor(2.0)
for _ in range(3):
    loss = (w * x - 1.0) ** 2
    loss.backward()
