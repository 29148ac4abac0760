"""sequential.py's network with 8 hidden units: a weight of 8 rows, too many for its box to
show every number, so a view of its modules holds the parameters inside them."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
X = torch.tensor([[1.0, 2.0], [0.5, -1.0]])
y = torch.tensor([[1.0], [0.0]])
loss = nn.functional.mse_loss(model(X), y)
loss.backward()
