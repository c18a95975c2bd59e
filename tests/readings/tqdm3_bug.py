import torch
from tqdm import tqdm
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(16, 2, 4)
N = 4
for i, x in tqdm(enumerate(data)):
    loss = model(x).pow(2).mean()
    loss.backward()  # expect: GL003
    if (i + 1) % N == 0:
        opt.step()
        opt.zero_grad()
