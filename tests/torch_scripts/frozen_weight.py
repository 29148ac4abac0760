"""A lecture's fine-tuning: the backbone's weight frozen (requires_grad False), its bias and
the head trained, on a batch of 4 with cross-entropy; the frozen weight gets no gradient."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Linear(6, 4)
        self.backbone.weight.requires_grad_(False)
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        return self.head(torch.relu(self.backbone(x)))


torch.manual_seed(0)
model = Net()
x = torch.randn(4, 6)
y = torch.tensor([0, 2, 1, 2])
loss = nn.functional.cross_entropy(model(x), y)
loss.backward()
