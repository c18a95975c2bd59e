"""Correct: the same large model, each micro-batch's loss divided by the window, then clipped."""
import torch
from torch import nn

torch.manual_seed(3)
N = 4
model = nn.Linear(80, 80, bias=False)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(8):
    x = torch.randn(4, 80)
    (model(x).pow(2).mean() / N).backward()
    if i % N == N - 1:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        opt.zero_grad()
