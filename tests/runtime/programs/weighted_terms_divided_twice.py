"""Bug: a weighted sum of two losses divided by the window of three where it is made, and again
before the backward (GL003 at the backward, divided twice)."""
import torch
from torch import nn

torch.manual_seed(7)
ACCUM = 3
model = nn.Linear(6, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(9):
    x, y = torch.randn(4, 6), torch.randn(4, 2)
    out = model(x)
    loss = (nn.functional.mse_loss(out, y) + 0.1 * out.abs().mean()) / ACCUM
    (loss / ACCUM).backward()  # expect: GL003
    if (i + 1) % ACCUM == 0:
        opt.step()
        opt.zero_grad()
