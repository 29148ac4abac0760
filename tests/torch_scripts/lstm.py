"""nn.LSTM reads a batch of two sequences with two layers; a linear head scores its last state."""

import torch
from torch import nn

torch.manual_seed(0)
lstm = nn.LSTM(input_size=2, hidden_size=3, num_layers=2, batch_first=True)
head = nn.Linear(3, 1)
x = torch.randn(2, 3, 2)
y = torch.tensor([[1.0], [0.0]])
out, (h_n, c_n) = lstm(x)
score = head(h_n[-1])
loss = (score - y).pow(2).mean()
loss.backward()
