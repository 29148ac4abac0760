"""A ResNet-18 (torchvision's layout, written out here) on one 224x224 image: forward, backward.

Four stages of two BasicBlocks each (64, 128, 256, 512 channels), a 7x7 stem
and a 1000-way classifier, 11.7 M parameters; its names match torchvision's
(``model.layer1.0.conv1``). $SIZE sets the image's side (default 224), $WIDTH the
first stage's channels (default 64; each stage doubles them) and $CLASSES the classes.
"""

import os

import torch
from torch import nn


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm, and the input added back (downsampled if needed)."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, width: int = 64, classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths = [(width, width, 1), (width, 2 * width, 2), (2 * width, 4 * width, 2),
                  (4 * width, 8 * width, 2)]
        for number, (inplanes, planes, stride) in enumerate(widths, start=1):
            setattr(self, f"layer{number}", nn.Sequential(BasicBlock(inplanes, planes, stride),
                                                          BasicBlock(planes, planes)))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


torch.manual_seed(0)
side = int(os.environ.get("SIZE", "224"))
model = ResNet18(int(os.environ.get("WIDTH", "64")), int(os.environ.get("CLASSES", "1000")))
image = torch.randn(1, 3, side, side)
label = torch.tensor([3])
loss = nn.functional.cross_entropy(model(image), label)
loss.backward()
