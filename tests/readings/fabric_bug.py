import torch
import lightning as L
fabric = L.Fabric()
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = fabric.setup(model, opt)
for x in torch.randn(8, 2, 4):
    loss = model(x).pow(2).mean()
    fabric.backward(loss)
    fabric.clip_gradients(model, opt, max_norm=1.0)
    opt.step()  # expect: GL001
