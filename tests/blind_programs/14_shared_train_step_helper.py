# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: a shared fit_step(net, opt, ...) helper clears the global `model` instead of its `net` argument; fine for the first model, but the second model is never cleared and steps on stale gradients.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
model_b = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt_a = torch.optim.SGD(model.parameters(), lr=0.01)
opt_b = torch.optim.SGD(model_b.parameters(), lr=0.01)


def fit_step(net, opt, x, y):
    model.zero_grad()
    loss = F.mse_loss(net(x), y)
    loss.backward()
    opt.step()  # expect: GL001
    return loss.item()


for it in range(6):
    x = torch.randn(16, 4)
    y_a = x.sum(dim=1, keepdim=True)
    y_b = x.prod(dim=1, keepdim=True)
    la = fit_step(model, opt_a, x, y_a)
    lb = fit_step(model_b, opt_b, x, y_b)
    print(it, round(la, 3), round(lb, 3))
