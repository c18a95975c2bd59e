import torch
from accelerate import Accelerator
accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = accelerator.prepare(model, opt)
for i, x in enumerate(torch.randn(16, 2, 4)):
    loss = model(x).pow(2).mean()
    accelerator.backward(loss)  # expect: GL003, GL006
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
