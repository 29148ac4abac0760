"""A GRU cell read over a sequence of four inputs, with a squared loss on its last state:
the recurrent network a lecture steps through, one backward step after another."""

import torch
from torch import nn

torch.manual_seed(0)
cell = nn.GRUCell(input_size=2, hidden_size=2)
xs = torch.randn(4, 1, 2)
h = torch.zeros(1, 2)
for x in xs:
    h = cell(x, h)
loss = h.pow(2).sum()
loss.backward()
