import torch
class Base:
    def __init__(self):
        self.model = torch.nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def get_batches(self):
        raise NotImplementedError
    def train(self):
        for x in self.get_batches():
            loss = self.model(x).pow(2).mean()
            loss.backward()
            self.opt.step()  # expect: GL001
