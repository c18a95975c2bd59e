import torch
from torch import nn
class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.opt = torch.optim.Adam(self.fc.parameters())
    def step(self, x):
        loss = self.fc(x).pow(2).mean()
        loss.backward()
        self.opt.step()  # expect: GL001 (possible)
