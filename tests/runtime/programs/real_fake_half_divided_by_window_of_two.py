"""Correct: a discriminator loss averaged over its real and fake halves (`* 0.5`), then divided by a
window of two micro-batches: 0.5 is the objective, / 2 the window (not a division by 2 twice)."""
import torch
from torch import nn

torch.manual_seed(6)
accum = 2
D = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
opt_D = torch.optim.Adam(D.parameters(), lr=2e-4)
bce = nn.BCEWithLogitsLoss()
for i in range(8):
    real, fake = torch.randn(8, 4) + 1, torch.randn(8, 4)
    real_loss = bce(D(real), torch.ones(8, 1))
    fake_loss = bce(D(fake), torch.zeros(8, 1))
    d_loss = (real_loss + fake_loss) * 0.5
    (d_loss / accum).backward()
    if (i + 1) % accum == 0:
        opt_D.step()
        opt_D.zero_grad()
