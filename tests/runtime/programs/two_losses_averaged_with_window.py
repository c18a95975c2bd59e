"""Correct: two losses averaged and divided by the window in one divisor, `/ (2 * ACCUM)`."""
import torch
from torch import nn

torch.manual_seed(7)
ACCUM = 3
model = nn.Linear(6, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(9):
    x, y = torch.randn(4, 6), torch.randn(4, 2)
    out = model(x)
    loss = (nn.functional.mse_loss(out, y) + nn.functional.l1_loss(out, y)) / (2 * ACCUM)
    loss.backward()
    if (i + 1) % ACCUM == 0:
        opt.step()
        opt.zero_grad()
