"""Bug: an undivided window of four micro-batches on a model whose parameters are all too large for a
copy of their gradients; clipping changes them in place before the step (GL003 at the backward)."""
import torch
from torch import nn

torch.manual_seed(3)
N = 4
model = nn.Linear(80, 80, bias=False)  # 6,400 elements per gradient
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(8):
    x = torch.randn(4, 80)
    model(x).pow(2).mean().backward()  # expect: GL003
    if i % N == N - 1:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        opt.zero_grad()
