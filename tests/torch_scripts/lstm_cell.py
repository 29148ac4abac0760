"""An LSTM cell unrolled by hand over a sequence of three inputs."""

import torch
from torch import nn

torch.manual_seed(0)
cell = nn.LSTMCell(input_size=2, hidden_size=3)
xs = torch.randn(3, 1, 2)
h = torch.zeros(1, 3)
c = torch.zeros(1, 3)
for x in xs:
    h, c = cell(x, (h, c))
loss = h.sum() + c.pow(2).sum()
loss.backward()
