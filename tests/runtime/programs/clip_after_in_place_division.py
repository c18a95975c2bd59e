"""Correct: the window's summed gradients are divided by the window in place, then clipped: the
division is measured before the clip."""
import torch
from torch import nn

torch.manual_seed(2)
N = 4
model = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(12):
    x, y = torch.randn(3, 6), torch.randn(3, 1)
    nn.functional.mse_loss(model(x), y).backward()
    if (i + 1) % N == 0:
        for p in model.parameters():
            p.grad /= N
        nn.utils.clip_grad_norm_(model.parameters(), 0.05)
        opt.step()
        opt.zero_grad()
