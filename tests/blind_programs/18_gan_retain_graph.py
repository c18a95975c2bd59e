# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: D's loss uses the undetached G(z) (backward with retain_graph=True), writing D-loss gradients into G; G's optimizer is only cleared after its step, so it steps on D-loss + G-loss gradients.
import torch
import torch.nn as nn

torch.manual_seed(0)

noise_dim = 5
generator = nn.Sequential(nn.Linear(noise_dim, 16), nn.ReLU(), nn.Linear(16, 3))
critic = nn.Sequential(nn.Linear(3, 16), nn.LeakyReLU(0.1), nn.Linear(16, 1))
opt_G = torch.optim.Adam(generator.parameters(), lr=1e-3)
opt_D = torch.optim.Adam(critic.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()

for it in range(7):
    real = torch.randn(8, 3)
    z = torch.randn(8, noise_dim)
    fake = generator(z)

    opt_D.zero_grad()
    loss_D = bce(critic(real), torch.ones(8, 1)) + bce(critic(fake), torch.zeros(8, 1))
    loss_D.backward(retain_graph=True)
    opt_D.step()

    loss_G = bce(critic(fake), torch.ones(8, 1))
    loss_G.backward()
    opt_G.step()  # expect: GL005
    opt_G.zero_grad()

print(loss_D.item(), loss_G.item())
