import torch
import sys
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def main(*args):
    for x in torch.randn(8, 2, 4):
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()  # expect: GL001
if __name__ == "__main__":
    main()
