import torch
import torch_xla.core.xla_model as xm
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 2, 4):
    loss = model(x).pow(2).mean()
    loss.backward()
    xm.optimizer_step(opt)  # expect: GL001
