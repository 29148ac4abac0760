"""Means over some axes, as a CNN's global average pool and a layer's statistics take
them: x.mean(1, keepdim=True), z.mean((2, 3)) and z.mean((2, 3), keepdim=True); the
loss weighs each result's entries differently, so each gradient has its own numbers."""

import torch

torch.manual_seed(0)
x = torch.randn(2, 3, requires_grad=True)
z = torch.randn(1, 2, 2, 2, requires_grad=True)
m = x.mean(1, keepdim=True)
pooled = z.mean((2, 3))
kept = z.mean((2, 3), keepdim=True)
loss = (m * torch.tensor([[1.0], [2.0]])).sum() + (pooled * torch.tensor([3.0, -1.0])).sum() \
    + (kept.flatten() * torch.tensor([0.5, 2.0])).sum()
loss.backward()
