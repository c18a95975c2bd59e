import torch
class T:
    def __init__(self):
        self.model = torch.nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.global_step = 0
        self.N = 4
    def optimize(self):
        self.opt.step()
        self.opt.zero_grad()
        self.global_step += 1
    def train(self, data):
        for i, x in enumerate(data):
            loss = self.model(x).pow(2).mean() / self.N
            loss.backward()
            if i % self.N == 0:  # expect: GL004
                self.optimize()
