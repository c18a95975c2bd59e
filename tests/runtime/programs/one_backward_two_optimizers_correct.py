"""Correct: one loss through an encoder and a head, each with an optimizer of its own, both cleared
before the backward and both stepped after it."""
import torch
from torch import nn

torch.manual_seed(13)
encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
head = nn.Linear(16, 1)
opt_enc = torch.optim.Adam(encoder.parameters(), lr=1e-3)
opt_head = torch.optim.SGD(head.parameters(), lr=1e-2)
for _ in range(6):
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    opt_enc.zero_grad()
    opt_head.zero_grad()
    loss = nn.functional.mse_loss(head(encoder(x)), y)
    loss.backward()
    opt_enc.step()
    opt_head.step()
