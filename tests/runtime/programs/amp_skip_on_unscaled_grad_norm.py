"""Correct: the same skip, on the norm read after `scaler.unscale_`."""
import torch
from torch import nn

torch.manual_seed(18)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu")
for x, y in zip(torch.randn(6, 8, 16), torch.randint(0, 4, (6, 8))):
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])
    if norm > 100.0:
        scaler.update()
        continue
    scaler.step(optimizer)
    scaler.update()
