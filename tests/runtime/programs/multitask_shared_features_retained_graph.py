"""Correct: one forward, then the backward of each of three losses of that batch (the graph retained
between them), then one step: several losses of one batch, not micro-batches."""
import torch
from torch import nn

torch.manual_seed(15)
model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(6):
    x, y = torch.randn(5, 6), torch.randint(0, 3, (5,))
    out = model(x)
    losses = [nn.functional.cross_entropy(out, y), out.pow(2).mean(), out.abs().mean()]
    opt.zero_grad()
    for k, loss in enumerate(losses):
        loss.backward(retain_graph=k < len(losses) - 1)
    opt.step()
