# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: accumulates 4 micro-batches per step with enumerate and (i+1)%4, but the loss is never divided by 4, so each step sees 4x the mean gradient.
import torch
from torch import nn

torch.manual_seed(0)

ACCUM_STEPS = 4

net = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
criterion = nn.SmoothL1Loss()

batches = [(torch.randn(8, 6), torch.randn(8, 1)) for _ in range(12)]

for epoch in range(3):
    for i, (inputs, targets) in enumerate(batches):
        preds = net(inputs)
        loss = criterion(preds, targets)
        loss.backward()  # expect: GL003
        if (i + 1) % ACCUM_STEPS == 0:
            opt.step()
            opt.zero_grad()
    print("epoch", epoch, "last loss", round(loss.item(), 4))
