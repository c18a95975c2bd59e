"""Correct: the same trainer, dividing the loss by its accumulation steps before the backward."""
import torch
from torch import nn


class Trainer:
    def __init__(self, model, gradient_accumulation_steps=2, max_grad_norm=1.0):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.max_grad_norm = max_grad_norm

    def training_step(self, batch):
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        loss = loss / self.gradient_accumulation_steps
        loss.backward()
        return loss.detach()

    def train(self, batches):
        for step, batch in enumerate(batches):
            self.training_step(batch)
            if (step + 1) % self.gradient_accumulation_steps == 0:
                nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
                self.optimizer.step()
                self.optimizer.zero_grad()


torch.manual_seed(4)
trainer = Trainer(nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 3)))
trainer.train([(torch.randn(8, 12) * 5, torch.randint(0, 3, (8,))) for _ in range(8)])
