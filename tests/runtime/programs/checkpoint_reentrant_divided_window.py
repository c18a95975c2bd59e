"""Correct: the same reentrant checkpointed block, the loss divided by the window of four."""
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
    loss = head(h).pow(2).mean() / N
    loss.backward()
    if (i + 1) % N == 0:
        opt.step()
        opt.zero_grad()
