# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: standard GAN loop -- D is cleared before its loss (fake detached), G is cleared before its loss; G's backward dirties D's grads but D clears them before its next step.
import torch
import torch.nn as nn

torch.manual_seed(0)

latent = 4
G = nn.Sequential(nn.Linear(latent, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()

for it in range(8):
    real = torch.randn(16, 2) * 0.5 + 1.0
    z = torch.randn(16, latent)
    ones = torch.ones(16, 1)
    zeros = torch.zeros(16, 1)

    fake = G(z)

    opt_d.zero_grad()
    d_loss = bce(D(real), ones) + bce(D(fake.detach()), zeros)
    d_loss.backward()
    opt_d.step()

    opt_g.zero_grad()
    g_loss = bce(D(fake), ones)
    g_loss.backward()
    opt_g.step()

    print(f"{it}: d={d_loss.item():.3f} g={g_loss.item():.3f}")
