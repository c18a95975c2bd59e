# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: the train() helper calls zero_grad once before the epoch loop and never again, so from the second step on every step includes all previous batches' gradients.
import torch
import torch.nn as nn

torch.manual_seed(0)


def make_data(n=48):
    x = torch.randn(n, 4)
    y = (x[:, 0] > 0).long()
    return x, y


def train(model, optimizer, scheduler, x, y, epochs=2, bs=16):
    model.train()
    optimizer.zero_grad()
    for epoch in range(epochs):
        perm = torch.randperm(len(x))
        for s in range(0, len(x), bs):
            idx = perm[s:s + bs]
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            optimizer.step()  # expect: GL001
        scheduler.step()
        print("epoch", epoch, loss.item())


net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
X, Y = make_data()
train(net, opt, sched, X, Y)
