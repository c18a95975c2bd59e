import torch
from mylib import LRScheduler
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = LRScheduler(opt)
for x in torch.randn(8, 2, 4):
    loss = model(x).pow(2).mean()
    loss.backward()
    scheduler.zero_grad()  # expect: GL002 (possible)
    scheduler.step()
