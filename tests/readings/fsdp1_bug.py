import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
model = FSDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 2, 4)):
    loss = model(x).pow(2).mean() / 4
    loss.backward()  # expect: GL006
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
