# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: generator is updated first; its loss backprops through D and fills D's grads, then D backprops its own loss on top and steps without clearing first (D is only cleared after its step), so D steps on G-loss gradients.
import torch
import torch.nn as nn

torch.manual_seed(0)

Z = 3
gen = nn.Sequential(nn.Linear(Z, 12), nn.ReLU(), nn.Linear(12, 2))
disc = nn.Sequential(nn.Linear(2, 12), nn.ReLU(), nn.Linear(12, 1), nn.Sigmoid())
g_opt = torch.optim.Adam(gen.parameters(), lr=1e-3)
d_opt = torch.optim.Adam(disc.parameters(), lr=1e-3)
criterion = nn.BCELoss()

for it in range(8):
    real = torch.randn(10, 2) + 2.0
    noise = torch.randn(10, Z)
    valid = torch.ones(10, 1)
    fake_lbl = torch.zeros(10, 1)

    # generator update
    g_opt.zero_grad()
    fake = gen(noise)
    g_loss = criterion(disc(fake), valid)
    g_loss.backward()
    g_opt.step()

    # discriminator update
    d_loss = 0.5 * (criterion(disc(real), valid) + criterion(disc(fake.detach()), fake_lbl))
    d_loss.backward()
    d_opt.step()  # expect: GL005
    d_opt.zero_grad()

print(g_loss.item(), d_loss.item())
