"""A transformer block as a lecture writes it: pre-norm attention (2 heads), an MLP, residuals.

Three tokens of width 8; the loss is the mean square of the block's output.
"""

import torch
from torch import nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, width: int = 8, heads: int = 2) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attention(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


block = Block()
tokens = torch.randn(1, 3, 8)
loss = block(tokens).pow(2).mean()
loss.backward()
