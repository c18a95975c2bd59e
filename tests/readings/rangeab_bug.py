import torch
from tqdm import tqdm
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(16, 2, 4)
N = 4
for x in data:
    for k in range(1, 3):
        loss = model(x[k-1:k]).pow(2).mean()
        loss.backward()  # expect: GL003
    opt.step()
    opt.zero_grad()
