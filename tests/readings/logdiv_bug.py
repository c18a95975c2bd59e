import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
N = 4
for i, x in enumerate(torch.randn(16, 2, 4)):
    loss = model(x).pow(2).mean()
    print("loss", (loss / N).item())
    loss.backward()  # expect: GL003
    if (i + 1) % N == 0:
        opt.step()
        opt.zero_grad()
