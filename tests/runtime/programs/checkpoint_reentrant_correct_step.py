"""Correct: the same reentrant checkpointed model, cleared before each batch."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(11)
layers = nn.ModuleList([nn.Linear(6, 6) for _ in range(3)])
opt = torch.optim.Adam(layers.parameters(), lr=1e-3)
for _ in range(5):
    opt.zero_grad()
    h = torch.randn(4, 6, requires_grad=True)
    for layer in layers:
        h = checkpoint(lambda t, layer=layer: torch.relu(layer(t)), h, use_reentrant=True)
    h.sum().backward()
    opt.step()
