"""Bug: one backward feeds an encoder's and a head's optimizer; the head's clear was moved between
the backward and its step, so the head never learns (GL002 at that clear)."""
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
    loss = nn.functional.mse_loss(head(encoder(x)), y)
    loss.backward()
    opt_enc.step()
    opt_head.zero_grad()  # expect: GL002
    opt_head.step()
