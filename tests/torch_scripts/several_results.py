"""Ops that return several tensors: chunk, unbind, max over a dimension, topk."""

import torch

scores = torch.tensor([[1.0, 3.0, -2.0, 0.5], [2.0, -1.0, 4.0, 1.5]], requires_grad=True)
left, right = scores.chunk(2, dim=1)
first, second = right.unbind(0)
best, where = torch.max(left, dim=1)
top, top_at = scores.topk(2, dim=1)
loss = (first * second).sum() + (best ** 2).sum() + top.sum()
loss.backward()
