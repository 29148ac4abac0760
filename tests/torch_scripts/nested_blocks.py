"""A model of a lecture on residual blocks: an embedding, two blocks (a linear layer, a
layer norm, a ReLU and the skip connection), a head; on a batch of 8, inside main()."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return x + torch.relu(self.norm(self.lin(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(20, 32)
        self.block1 = Block(32)
        self.block2 = Block(32)
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        return self.head(self.block2(self.block1(self.embed(x))))


def main():
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(8, 20)
    y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    loss = nn.functional.cross_entropy(net(x), y)
    loss.backward()


if __name__ == "__main__":
    main()
