"""Bug: a block run under reentrant activation checkpointing (its backward runs a backward of its
own), in an undivided window of four micro-batches (GL003 at the backward)."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(10)
N = 4
block = nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 8))
head = nn.Linear(8, 1)
opt = torch.optim.SGD([*block.parameters(), *head.parameters()], lr=0.01)
for i in range(8):
    x = torch.randn(4, 8, requires_grad=True)
    h = checkpoint(block, x, use_reentrant=True)
    loss = head(h).pow(2).mean()
    loss.backward()  # expect: GL003
    if (i + 1) % N == 0:
        opt.step()
        opt.zero_grad()
