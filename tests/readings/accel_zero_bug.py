import torch
from accelerate import Accelerator
accelerator = Accelerator(gradient_accumulation_steps=4)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = accelerator.prepare(model, opt)
for x in torch.randn(16, 2, 4):
    with accelerator.accumulate(model):
        loss = model(x).pow(2).mean()
        accelerator.backward(loss)
        model.zero_grad()  # expect: GL002
        opt.step()
