"""Two losses from one trunk, each with a backward() of its own: .grad adds them up."""

import torch

a = torch.tensor(2.0, requires_grad=True)
h = a * a
L1 = 3 * h
L2 = h + 1
L1.backward(retain_graph=True)
L2.backward()
