# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: textbook loop -- zero_grad, backward, step on every batch; each step sees exactly its own batch's gradient.
import torch
import torch.nn as nn

torch.manual_seed(0)

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.MSELoss()

X = torch.randn(64, 8)
Y = torch.randn(64, 1)

for epoch in range(2):
    for start in range(0, 64, 16):
        xb, yb = X[start:start + 16], Y[start:start + 16]
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
