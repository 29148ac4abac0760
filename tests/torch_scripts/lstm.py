"""nn.LSTM over a batch of two sequences, two layers, the final state used for the loss."""

import torch
from torch import nn

torch.manual_seed(0)
lstm = nn.LSTM(input_size=2, hidden_size=3, num_layers=2, batch_first=True)
x = torch.randn(2, 3, 2)
out, (h_n, c_n) = lstm(x)
loss = out.mean() + h_n[-1].pow(2).sum()
loss.backward()
