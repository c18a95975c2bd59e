import torch
class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt
    def train_step(self, x):
        loss = self.model(x).pow(2).mean()
        loss.backward()
        self.opt.zero_grad()  # expect: GL002
        self.opt.step()
