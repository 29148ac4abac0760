"""A lecture's first PyTorch network: nn.Sequential on a batch of two, MSE loss."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
X = torch.tensor([[1.0, 2.0], [0.5, -1.0]])
y = torch.tensor([[1.0], [0.0]])
loss = nn.functional.mse_loss(model(X), y)
loss.backward()
