import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.optimizer = torch.optim.Adam(self.parameters(), lr=0.1)
    def forward(self, x):
        return self.fc(x)
    def fit(self, data):
        for x in data:
            loss = self(x).pow(2).mean()
            loss.backward()
            self.optimizer.step()  # expect: GL001
net = Net()
net.fit(torch.randn(8, 2, 4))
