"""Bug: a reentrant checkpointed model stepped on every batch, its gradients never cleared (GL001 at
the step)."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(11)
layers = nn.ModuleList([nn.Linear(6, 6) for _ in range(3)])
opt = torch.optim.Adam(layers.parameters(), lr=1e-3)
for _ in range(5):
    h = torch.randn(4, 6, requires_grad=True)
    for layer in layers:
        h = checkpoint(lambda t, layer=layer: torch.relu(layer(t)), h, use_reentrant=True)
    h.sum().backward()
    opt.step()  # expect: GL001
