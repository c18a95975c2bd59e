import torch
def make_train(model, opt):
    def train(x):
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.zero_grad()  # expect: GL002
        opt.step()
    return train
