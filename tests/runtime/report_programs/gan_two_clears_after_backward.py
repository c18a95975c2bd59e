"""Bug: two optimizers are cleared between the backward pass and their steps; the last clear wipes
what `opt_D.step()` needs (GL002, one report line however the first step saw it)."""
import torch
from torch import nn

torch.manual_seed(0)
netG = nn.Linear(4, 4)
netD = nn.Linear(4, 1)
opt_G = torch.optim.SGD(netG.parameters(), lr=0.1)
opt_D = torch.optim.SGD(netD.parameters(), lr=0.1)
for _ in range(4):
    loss = netD(netG(torch.randn(2, 4))).mean()
    loss.backward()
    opt_G.zero_grad()
    opt_D.zero_grad()  # expect: GL002
    opt_G.step()
    opt_D.step()
