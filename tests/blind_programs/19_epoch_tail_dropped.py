# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: 3-micro-batch accumulation with loss/3 over 10 batches per epoch; model.zero_grad() at each epoch start drops the trailing 1-batch partial window by design, every step sees exactly 3 micro-batches.
import torch
import torch.nn as nn

torch.manual_seed(0)

ACCUM = 3
model = nn.Sequential(nn.Linear(5, 10), nn.ReLU(), nn.Linear(10, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

train_set = [(torch.randn(6, 5), torch.randn(6, 1)) for _ in range(10)]

for epoch in range(3):
    model.zero_grad()
    for i, (x, y) in enumerate(train_set):
        loss = nn.functional.mse_loss(model(x), y)
        (loss / ACCUM).backward()
        if (i + 1) % ACCUM == 0:
            optimizer.step()
            optimizer.zero_grad()
    print("epoch", epoch, "loss", loss.item())
