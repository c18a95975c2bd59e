import torch
def make_train(model, opt):
    def train(x):
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()  # expect: GL001 (possible)
    return train
