# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: small Trainer class; each train_step clears with set_to_none=True, backprops, clips, steps and advances a StepLR -- one fresh gradient per step.
import torch
import torch.nn as nn

torch.manual_seed(0)


class Trainer:
    def __init__(self, model, lr=0.01):
        self.model = model
        self.opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        self.sched = torch.optim.lr_scheduler.StepLR(self.opt, step_size=3, gamma=0.5)
        self.loss_fn = nn.BCEWithLogitsLoss()

    def train_step(self, batch):
        x, y = batch
        self.opt.zero_grad(set_to_none=True)
        logits = self.model(x).squeeze(-1)
        loss = self.loss_fn(logits, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=1.0)
        self.opt.step()
        self.sched.step()
        return loss.item()

    def fit(self, batches):
        history = []
        for b in batches:
            history.append(self.train_step(b))
        return history


model = nn.Sequential(nn.Linear(5, 8), nn.GELU(), nn.Linear(8, 1))
batches = [(torch.randn(12, 5), torch.randint(0, 2, (12,)).float()) for _ in range(9)]
hist = Trainer(model).fit(batches)
print(["%.3f" % h for h in hist])
