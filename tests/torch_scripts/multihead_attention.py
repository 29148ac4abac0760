"""nn.MultiheadAttention as a lecture uses it: self-attention, the weights returned too."""

import torch
from torch import nn

torch.manual_seed(0)
attention = nn.MultiheadAttention(embed_dim=4, num_heads=2, batch_first=True)
x = torch.randn(1, 3, 4, requires_grad=True)
out, weights = attention(x, x, x)
loss = out.pow(2).mean()
loss.backward()
