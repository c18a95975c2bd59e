# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: accumulates 3 unscaled micro-batch losses, then divides every p.grad by 3 in place before the step and clears with set_to_none after -- equivalent to scaling the loss.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_MICRO = 3
model = nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05)

stream = iter([(torch.randn(5, 6), torch.randint(0, 3, (5,))) for _ in range(8 * N_MICRO)])

for step in range(8):
    for _ in range(N_MICRO):
        xb, yb = next(stream)
        F.cross_entropy(model(xb), yb).backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.grad /= N_MICRO
    opt.step()
    opt.zero_grad(set_to_none=True)

print("ok")
