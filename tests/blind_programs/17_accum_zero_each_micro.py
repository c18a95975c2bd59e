# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: intends 3-micro-batch accumulation (loss / 3, step when (i+1)%3==0) but calls zero_grad at the top of every micro-batch, wiping the first two backward passes of each window before the step.
import torch
import torch.nn as nn

torch.manual_seed(0)

grad_accum = 3
model = nn.Sequential(nn.Linear(9, 9), nn.ReLU(), nn.Linear(9, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)

loader = [(torch.randn(4, 9), torch.randn(4, 1)) for _ in range(24)]

for i, (x, y) in enumerate(loader):
    optimizer.zero_grad()  # expect: GL002
    pred = model(x)
    loss = nn.functional.l1_loss(pred, y) / grad_accum
    loss.backward()
    if (i + 1) % grad_accum == 0:
        optimizer.step()

print("last", loss.item())
