"""A lecture's MLP on a batch of 8: its hidden layer's tables (8×32, value and gradient side
by side) are each wider than a clip's frame at a size one reads."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
x = torch.randn(8, 20)
y = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3])
loss = nn.functional.cross_entropy(model(x), y)
loss.backward()
