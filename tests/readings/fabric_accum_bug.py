import torch
import lightning as L
fabric = L.Fabric()
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = fabric.setup(model, opt)
for i, x in enumerate(torch.randn(8, 2, 4)):
    boundary = (i + 1) % 4 == 0
    with fabric.no_backward_sync(model, enabled=not boundary):
        loss = model(x).pow(2).mean()
        fabric.backward(loss)  # expect: GL003
    if boundary:
        opt.step()
        opt.zero_grad()
