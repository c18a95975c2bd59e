"""Correct: three task heads on a shared encoder, one backward per task on the same batch (the
encoder's gradient is the sum over tasks), then one step: not an accumulation window."""
import torch
from torch import nn

torch.manual_seed(14)
encoder = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
heads = nn.ModuleList([nn.Linear(16, 1) for _ in range(3)])
opt = torch.optim.Adam([*encoder.parameters(), *heads.parameters()], lr=1e-3)
for _ in range(6):
    x = torch.randn(8, 10)
    targets = torch.randn(3, 8, 1)
    opt.zero_grad()
    for head, y in zip(heads, targets):
        loss = nn.functional.mse_loss(head(encoder(x)), y)
        loss.backward()
    opt.step()
