"""nn.GRU, both directions, reading a sequence of three inputs."""

import torch
from torch import nn

torch.manual_seed(0)
gru = nn.GRU(input_size=2, hidden_size=2, bidirectional=True)
x = torch.randn(3, 1, 2, requires_grad=True)
out, h_n = gru(x)
loss = out.pow(2).sum()
loss.backward()
