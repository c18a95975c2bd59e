"""Correct: the `0.5 * mse` objective, divided by the window of four before the backward."""
import torch
from torch import nn

torch.manual_seed(5)
accumulation_steps = 4
model = nn.Sequential(nn.Linear(5, 10), nn.ReLU(), nn.Linear(10, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(16):
    x, y = torch.randn(6, 5), torch.randn(6, 1)
    loss = 0.5 * nn.functional.mse_loss(model(x), y)
    (loss / accumulation_steps).backward()
    if (i + 1) % accumulation_steps == 0:
        opt.step()
        opt.zero_grad()
