"""Bug: per-task backward passes inside a window of two micro-batches whose losses are not divided by
the window (GL003 at the backward)."""
import torch
from torch import nn

torch.manual_seed(16)
accum = 2
encoder = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
heads = nn.ModuleList([nn.Linear(16, 1) for _ in range(2)])
opt = torch.optim.SGD([*encoder.parameters(), *heads.parameters()], lr=1e-2)
for i in range(8):
    x = torch.randn(8, 10)
    targets = torch.randn(2, 8, 1)
    for head, y in zip(heads, targets):
        loss = nn.functional.mse_loss(head(encoder(x)), y)
        loss.backward()  # expect: GL003
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
