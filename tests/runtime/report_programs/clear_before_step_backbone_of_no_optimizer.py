"""Bug: the head's clear sits between the backward and the head's step; the backbone the loss also
reaches belongs to no optimizer, so nothing of the pass is left to be stepped: the clear loses it
(GL002 at the clear, on both sides; the backbone's gradients are no by-product kept for a step)."""
import torch
from torch import nn

torch.manual_seed(0)
backbone = nn.Linear(4, 4)  # requires grad, trained by no optimizer
head = nn.Linear(4, 1)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
for _ in range(4):
    loss = head(backbone(torch.randn(2, 4))).mean()
    loss.backward()
    opt.zero_grad()  # expect: GL002
    opt.step()
