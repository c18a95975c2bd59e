"""Bug: `if i % accum == 0` with a zero-based counter steps after the first micro-batch alone; the
wrong window is the first step's (GL004, first at step 1)."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
opt.zero_grad()
for i in range(16):
    loss = model(torch.randn(2, 4)).pow(2).mean() / accum
    loss.backward()
    if i % accum == 0:  # expect: GL004
        opt.step()
        opt.zero_grad()
