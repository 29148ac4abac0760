"""A residual net as pytorch-cifar writes its BasicBlock: the ReLUs functional (fn.relu,
the block's own ops between its modules), the shortcut an empty Sequential (no op) or a
downsampling conv-bn; two blocks."""

import torch
from torch import nn
from torch.nn import functional as fn


class BasicBlock(nn.Module):
    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or inplanes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x):
        out = fn.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return fn.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layers = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 16, 2))
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        x = fn.relu(self.bn1(self.conv1(x)))
        x = self.layers(x)
        return self.fc(torch.flatten(fn.adaptive_avg_pool2d(x, 1), 1))


torch.manual_seed(0)
model = ResNet()
image = torch.randn(1, 3, 8, 8)
loss = fn.cross_entropy(model(image), torch.tensor([1]))
loss.backward()
