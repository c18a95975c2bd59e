import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def train_step(x):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()  # expect: GL001 (possible)
