import torch
def make_train(model, opt):
    def train(x):
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()  # expect: GL001
    return train
model = torch.nn.Linear(4, 1)
train = make_train(model, torch.optim.SGD(model.parameters(), lr=0.1))
for x in torch.randn(8, 2, 4):
    train(x)
