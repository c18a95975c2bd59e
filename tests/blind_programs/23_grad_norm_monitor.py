# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: trainer method logs the gradient norm and then "resets" state including model.zero_grad(), called between backward() and step(), so the optimizer steps on cleared gradients.
import torch
import torch.nn as nn

torch.manual_seed(0)


class Runner:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.grad_norms = []

    def _record_and_reset(self):
        total = 0.0
        for p in self.model.parameters():
            if p.grad is not None:
                total += p.grad.detach().pow(2).sum().item()
        self.grad_norms.append(total ** 0.5)
        self.model.zero_grad()  # expect: GL002

    def step(self, x, y):
        self.optimizer.zero_grad()
        loss = nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self._record_and_reset()
        self.optimizer.step()
        return loss.item()


r = Runner()
for i in range(8):
    r.step(torch.randn(10, 6), torch.randn(10, 1))
print(["%.3f" % g for g in r.grad_norms])
