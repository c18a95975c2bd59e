# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: GAN trainer class that clears D only once before training; D keeps its own earlier losses' grads (stale) and also receives G-loss grads through D(fake) before its next step.
import torch
import torch.nn as nn

torch.manual_seed(0)


class GANTrainer:
    def __init__(self):
        self.G = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
        self.D = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
        self.opts = {
            "g": torch.optim.Adam(self.G.parameters(), lr=1e-3),
            "d": torch.optim.Adam(self.D.parameters(), lr=1e-3),
        }
        self.crit = nn.BCEWithLogitsLoss()

    def d_step(self, real, fake):
        loss = self.crit(self.D(real), torch.ones(len(real), 1)) + \
            self.crit(self.D(fake.detach()), torch.zeros(len(fake), 1))
        loss.backward()
        self.opts["d"].step()  # expect: GL001, GL005
        return loss.item()

    def g_step(self, fake):
        self.opts["g"].zero_grad()
        loss = self.crit(self.D(fake), torch.ones(len(fake), 1))
        loss.backward()
        self.opts["g"].step()
        return loss.item()

    def train(self, iters):
        self.opts["d"].zero_grad()
        for it in range(iters):
            real = torch.randn(8, 2) + 1.0
            fake = self.G(torch.randn(8, 3))
            ld = self.d_step(real, fake)
            lg = self.g_step(fake)
            print(it, round(ld, 3), round(lg, 3))


GANTrainer().train(7)
