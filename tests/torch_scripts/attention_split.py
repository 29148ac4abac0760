"""nanoGPT's attention head on a sequence of three tokens: one projection split into q, k, v."""

import math

import torch
from torch import nn

torch.manual_seed(0)
n_embd = 4
c_attn = nn.Linear(n_embd, 3 * n_embd)
x = torch.randn(3, n_embd)
q, k, v = c_attn(x).split(n_embd, dim=-1)
att = (q @ k.T / math.sqrt(n_embd)).softmax(dim=-1)
y = att @ v
loss = y.pow(2).mean()
loss.backward()
