# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: loss divided by 4 and 4-step accumulation intended, but `if i % 4 == 0` with i from 0 steps right after the first micro-batch, so the first window has 1 micro-batch (later windows have 4).
import torch
import torch.nn as nn

torch.manual_seed(0)

accumulation = 4
model = nn.Linear(7, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()

inputs = torch.randn(21, 6, 7)
targets = torch.randint(0, 2, (21, 6))

for i in range(21):
    out = model(inputs[i])
    loss = loss_fn(out, targets[i]) / accumulation
    loss.backward()
    if i % accumulation == 0:  # expect: GL004
        optimizer.step()
        optimizer.zero_grad()

print("loss", loss.item())
