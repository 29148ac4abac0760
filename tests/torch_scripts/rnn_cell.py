"""An RNN cell with ReLU, run by hand over three inputs from a given first state."""

import torch
from torch import nn

torch.manual_seed(3)
cell = nn.RNNCell(input_size=2, hidden_size=3, nonlinearity="relu")
xs = torch.randn(3, 1, 2)
h0 = torch.full((1, 3), 0.5, requires_grad=True)
h = h0
for x in xs:
    h = cell(x, h)
loss = h.sum()
loss.backward()
