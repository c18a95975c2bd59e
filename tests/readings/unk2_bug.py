import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
N = 4
def train(loader, start):
    for step, x in enumerate(loader, start=start):
        loss = model(x).pow(2).mean()
        loss.backward()  # expect: GL003
        if (step + 1) % N == 0:
            opt.step()
            opt.zero_grad()
