"""A PyTorch RNN unrolled over $STEPS steps (default 100): h = tanh(W h + U x_t + b).

W, U and b are used at every step, so their edges span the whole loop.
"""

import os

import torch

torch.manual_seed(0)
steps = int(os.environ.get("STEPS", "100"))
W = torch.randn(3, 3, requires_grad=True)
U = torch.randn(3, 2, requires_grad=True)
b = torch.zeros(3, requires_grad=True)
xs = torch.randn(steps, 2)
h = torch.zeros(3)
for t in range(steps):
    h = torch.tanh(W @ h + U @ xs[t] + b)
loss = h.sum()
loss.backward()
