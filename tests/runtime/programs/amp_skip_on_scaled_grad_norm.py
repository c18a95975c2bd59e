"""Bug: an AMP loop that skips a step when the gradient norm is large, reading the norm before
`scaler.unscale_`: it is the scaler's scale times the real norm, so nearly every step is skipped
(GL007 where the norm is read)."""
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
    norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])  # expect: GL007
    if norm > 100.0:
        continue
    scaler.step(optimizer)
    scaler.update()
