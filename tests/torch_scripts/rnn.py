"""nn.RNN, the first RNN of a lecture: a batch of two sequences of four inputs."""

import torch
from torch import nn

torch.manual_seed(2)
rnn = nn.RNN(input_size=3, hidden_size=2)
x = torch.randn(4, 2, 3)
out, h_n = rnn(x)
loss = out[-1].pow(2).sum() + out.mean()
loss.backward()
