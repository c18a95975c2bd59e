import torch
from timm.utils import NativeScaler
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_scaler = NativeScaler()
for i, x in enumerate(torch.randn(16, 2, 4)):
    loss = model(x).pow(2).mean()
    loss_scaler(loss, opt, clip_grad=1.0, parameters=model.parameters(), need_update=(i + 1) % 4 == 0)  # expect: GL003
    if (i + 1) % 4 == 0:
        opt.zero_grad()
