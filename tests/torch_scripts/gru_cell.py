"""A GRU cell run by hand over three inputs, as a lecture writes the loop."""

import torch
from torch import nn

torch.manual_seed(1)
cell = nn.GRUCell(input_size=2, hidden_size=2)
xs = torch.randn(3, 1, 2)
h = torch.zeros(1, 2)
for x in xs:
    h = cell(x, h)
loss = h.pow(2).sum()
loss.backward()
