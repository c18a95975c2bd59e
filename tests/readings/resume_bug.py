import torch
from tqdm import tqdm
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(16, 2, 4)
N = 4
import sys
start = 0
if len(sys.argv) > 1:
    start = int(sys.argv[1])
step = start
for x in data:
    loss = model(x).pow(2).mean() / N
    loss.backward()
    if step % N == 0:  # expect: GL004
        opt.step()
        opt.zero_grad()
    step += 1
