"""Correct: each micro-batch's loss divided by the window of three, then clip_grad_value_ and the step."""
import torch
from torch import nn

torch.manual_seed(1)
accum = 3
net = nn.Linear(10, 2)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
batches = [(torch.randn(5, 10), torch.randint(0, 2, (5,))) for _ in range(9)]
optimizer.zero_grad()
for step, (x, y) in enumerate(batches, start=1):
    (nn.functional.cross_entropy(net(x), y) / accum).backward()
    if step % accum == 0:
        torch.nn.utils.clip_grad_value_(net.parameters(), clip_value=0.05)
        optimizer.step()
        optimizer.zero_grad()
