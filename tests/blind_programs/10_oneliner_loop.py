# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: backward, zero_grad and step packed on one line in the wrong order; the clear runs after backward, so every step sees zero gradients.
import torch
import torch.nn as nn

torch.manual_seed(0)

m = nn.Linear(5, 1)
o = torch.optim.SGD(m.parameters(), lr=0.1)
X, Y = torch.randn(100, 5), torch.randn(100, 1)

for i in range(10):
    xb, yb = X[i * 10:(i + 1) * 10], Y[i * 10:(i + 1) * 10]
    loss = ((m(xb) - yb) ** 2).mean()
    loss.backward(); o.zero_grad(); o.step()  # expect: GL002

print(loss.item())
