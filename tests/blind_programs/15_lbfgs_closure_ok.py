# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: LBFGS with the default max_iter; the closure clears grads itself before each backward, so every evaluation sees a fresh gradient.
import torch
import torch.nn as nn

torch.manual_seed(0)

X = torch.randn(30, 2)
Y = torch.sin(X[:, :1]) + 0.5 * X[:, 1:]

net = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
optimizer = torch.optim.LBFGS(net.parameters(), lr=0.5, max_iter=5, history_size=5)

for epoch in range(6):
    def closure():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(net(X), Y)
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    print(epoch, loss.item())
