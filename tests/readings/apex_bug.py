import torch
from apex import amp
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = amp.initialize(model, opt)
for x in torch.randn(8, 2, 4):
    loss = model(x).pow(2).mean()
    with amp.scale_loss(loss, opt) as scaled:
        scaled.backward()
    opt.step()  # expect: GL001
