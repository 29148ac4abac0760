"""Torch tensors, but none requires grad: autograd recorded no graph."""

import torch

x = torch.tensor([1.0, 2.0])
W = torch.tensor([[1.0, -1.0], [0.0, 1.0]])
z = W @ x
