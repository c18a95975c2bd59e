import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 2, 4):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()  # expect: GL001 (possible)
    for p in model.parameters():
        p.grad = p.grad / 2
