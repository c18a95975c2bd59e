"""Bug: the non-reentrant checkpoint, in an undivided window of three micro-batches (GL003 at the
backward)."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(19)
N = 3
block = nn.Sequential(nn.Linear(8, 8), nn.GELU())
head = nn.Linear(8, 1)
opt = torch.optim.SGD([*block.parameters(), *head.parameters()], lr=0.01)
for i in range(9):
    x = torch.randn(4, 8)
    loss = head(checkpoint(block, x, use_reentrant=False)).pow(2).mean()
    loss.backward()  # expect: GL003
    if i % N == N - 1:
        opt.step()
        opt.zero_grad()
