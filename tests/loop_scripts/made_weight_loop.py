"""An RNN loop whose input weight is made before the loop (scaled at its start), as a
lecture's initialisation writes it: W_xh = randn * 0.5, its gradient kept."""

import torch

torch.manual_seed(2)
W_xh = torch.randn(2, 2, requires_grad=True) * 0.5
W_xh.retain_grad()
W_hh = (torch.randn(2, 2) * 0.3).requires_grad_()
xs = torch.randn(6, 2)
h = torch.zeros(2)
for t in range(6):
    h = torch.tanh(xs[t] @ W_xh + h @ W_hh)
loss = (h ** 2).sum()
loss.backward()
