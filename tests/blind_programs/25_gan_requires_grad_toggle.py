# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: GAN where D is frozen with requires_grad_(False) during the G update (so G's loss never writes D grads); each optimizer is cleared right before its own backward; fake is detached for D.
import torch
import torch.nn as nn

torch.manual_seed(0)


def set_requires_grad(module, flag):
    for p in module.parameters():
        p.requires_grad_(flag)


netG = nn.Sequential(nn.Linear(2, 10), nn.ReLU(), nn.Linear(10, 2))
netD = nn.Sequential(nn.Linear(2, 10), nn.ReLU(), nn.Linear(10, 1))
optG = torch.optim.SGD(netG.parameters(), lr=0.01)
optD = torch.optim.SGD(netD.parameters(), lr=0.01)
loss_fn = nn.BCEWithLogitsLoss()

for it in range(7):
    real = torch.randn(12, 2) * 0.3
    fake = netG(torch.randn(12, 2))

    set_requires_grad(netD, True)
    optD.zero_grad()
    lossD = loss_fn(netD(real), torch.ones(12, 1)) + loss_fn(netD(fake.detach()), torch.zeros(12, 1))
    lossD.backward()
    optD.step()

    set_requires_grad(netD, False)
    optG.zero_grad()
    lossG = loss_fn(netD(fake), torch.ones(12, 1))
    lossG.backward()
    optG.step()

print(lossD.item(), lossG.item())
