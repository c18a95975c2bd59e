import torch
class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt
    def train_step(self, x):
        self.opt.zero_grad()
        loss = self.model(x).pow(2).mean()
        loss.backward()
        self.opt.step()
