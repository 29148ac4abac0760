"""A value changed in place where autograd does not see it: no drawing can show it correctly."""

import torch

W = torch.tensor([1.0, -2.0], requires_grad=True)
h = W * 3
with torch.no_grad():
    h.add_(1)
L = (h * h).sum()
L.backward()
