import torch
from mylib import build_optimizer
model = torch.nn.Linear(4, 1)
opt, info = build_optimizer(model, lr=0.1)
for x in torch.randn(8, 2, 4):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()  # expect: GL001 (possible)
