"""Correct: the same epoch-start clear with the step gated on `(i + 1) % N == 0`."""
import torch
from torch import nn

torch.manual_seed(17)
N = 3
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(9)]
for epoch in range(2):
    opt.zero_grad()
    for i, (x, y) in enumerate(data):
        (nn.functional.mse_loss(model(x), y) / N).backward()
        if (i + 1) % N == 0:
            opt.step()
            opt.zero_grad()
