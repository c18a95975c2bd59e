"""Correct: the loss of each of the four micro-batches is divided by 4, then the window's gradient is
clipped and applied."""
import torch
from torch import nn

torch.manual_seed(0)
N = 4
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(16)]
for i, (x, y) in enumerate(data):
    loss = nn.functional.mse_loss(model(x), y) / N
    loss.backward()
    if (i + 1) % N == 0:
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.1)
        opt.step()
        opt.zero_grad()
