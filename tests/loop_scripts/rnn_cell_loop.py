"""nn.RNNCell applied over $STEPS inputs (default 6): one cell, its weights shared by every step."""

import os

import torch

torch.manual_seed(1)
steps = int(os.environ.get("STEPS", "6"))
cell = torch.nn.RNNCell(2, 3)
xs = torch.randn(steps, 1, 2)
h = torch.zeros(1, 3)
for t in range(steps):
    h = cell(xs[t], h)
loss = h.sum()
loss.backward()
