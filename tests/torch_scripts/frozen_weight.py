"""A lecture's fine-tuning: the first layer's weight frozen (requires_grad False), its bias
and the head trained; the frozen weight gets no gradient."""

import torch
from torch import nn

torch.manual_seed(0)
backbone, head = nn.Linear(3, 2), nn.Linear(2, 1)
backbone.weight.requires_grad_(False)
x = torch.tensor([[1.0, -2.0, 0.5]])
loss = head(torch.relu(backbone(x))).pow(2).sum()
loss.backward()
