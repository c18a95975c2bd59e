import torch
from tqdm import tqdm
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(16, 2, 4)
N = 4
step = 0
for x in data:
    step += 1
    loss = model(x).pow(2).mean() / N
    loss.backward()
    if step % N == 1:  # expect: GL004
        opt.step()
        opt.zero_grad()
