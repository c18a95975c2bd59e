import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
N = 4
def train(loader, global_step):
    for x in loader:
        loss = model(x).pow(2).mean()
        loss.backward()  # expect: GL003
        global_step += 1
        if global_step % N == 0:
            opt.step()
            opt.zero_grad()
