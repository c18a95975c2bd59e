import torch
from schedulefree import AdamWScheduleFree
model = torch.nn.Linear(4, 1)
opt = AdamWScheduleFree(model.parameters(), lr=0.1)
for x in torch.randn(8, 2, 4):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()  # expect: GL001 (possible)
