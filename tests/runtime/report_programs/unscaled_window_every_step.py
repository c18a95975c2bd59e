"""Bug: a 4-micro-batch window whose loss is never divided: every window applies the sum (GL003 on
every step, counted on every step)."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 1)
accum = 4
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(40)]
opt.zero_grad()
for i, (x, y) in enumerate(data):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()  # expect: GL003
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
