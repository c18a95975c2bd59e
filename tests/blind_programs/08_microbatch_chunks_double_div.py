# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: splits each batch into 4 chunks and accumulates; the helper already divides by ACC and the caller divides by ACC again, so the loss is scaled by 1/16.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

ACC = 4
model = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def micro_loss(m, xb, yb):
    logits = m(xb)
    return F.cross_entropy(logits, yb) / ACC


def train_on_batch(x, y):
    optimizer.zero_grad()
    total = 0.0
    for xc, yc in zip(x.chunk(ACC), y.chunk(ACC)):
        loss = micro_loss(model, xc, yc)
        (loss / ACC).backward()  # expect: GL003
        total += loss.item()
    optimizer.step()
    return total


for step in range(6):
    x = torch.randn(32, 12)
    y = torch.randint(0, 4, (32,))
    print(step, train_on_batch(x, y))
