import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler()
for x in torch.randn(8, 2, 4):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    scaler.scale(loss).backward()
    for p in model.parameters():
        p.grad += 0.01 * torch.randn_like(p.grad)  # expect: GL007
    scaler.step(opt)
    scaler.update()
