"""A lecture's first CNN on two 8×8 images: a convolution, batch norm, ReLU, max pooling,
then a linear classifier; cross-entropy."""

import torch
from torch import nn

torch.manual_seed(1)
model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(4 * 3 * 3, 3))
x = torch.randn(2, 1, 8, 8)
y = torch.tensor([2, 0])
loss = nn.functional.cross_entropy(model(x), y)
loss.backward()
