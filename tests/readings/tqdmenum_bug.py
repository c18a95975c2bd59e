import torch
from tqdm import tqdm
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(16, 2, 4)
N = 4
for i, x in tqdm(enumerate(data)):
    loss = model(x).pow(2).mean() / N
    loss.backward()
    if i % N == 0:  # expect: GL004
        opt.step()
        opt.zero_grad()
