# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: LBFGS (max_iter=1, so one closure call per step) with a closure that never clears grads; every step's gradient still holds all earlier steps' backward passes.
import torch
import torch.nn as nn

torch.manual_seed(0)

x = torch.randn(40, 3)
true_w = torch.tensor([[1.5], [-2.0], [0.5]])
y = x @ true_w + 0.1 * torch.randn(40, 1)

lin = nn.Linear(3, 1)
lbfgs = torch.optim.LBFGS(lin.parameters(), lr=0.1, max_iter=1)


def closure():
    out = lin(x)
    loss = ((out - y) ** 2).mean()
    loss.backward()
    return loss


for step in range(8):
    loss = lbfgs.step(closure)  # expect: GL001
    print(step, float(loss))
