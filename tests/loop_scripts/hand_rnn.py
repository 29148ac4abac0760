"""A hand-written RNN over $STEPS steps (default 4): h = tanh(x[t] @ W_xh + h @ W_hh + b)."""

import os

import torch

torch.manual_seed(2)
steps = int(os.environ.get("STEPS", "4"))
W_xh = torch.randn(2, 3, requires_grad=True)
W_hh = torch.randn(3, 3, requires_grad=True)
b = torch.zeros(3, requires_grad=True)
x = torch.randn(steps, 2)
h = torch.zeros(3)
for t in range(steps):
    h = torch.tanh(x[t] @ W_xh + h @ W_hh + b)
loss = h.sum()
loss.backward()
