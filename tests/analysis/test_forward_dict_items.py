"""A module of this file whose `forward` returns a dict built in sight (`return {"loss": loss, "accuracy":
acc.item()}`) is read by key: the item made by `.item()` is a number and holds no graph, the loss holds this forward's
graph. self-llm's BGE-M3 notebook summed and listed `out['accuracy']` of such a forward, called `model(**batch)`
with a batch built by a comprehension: three false certain GL008 of lockbox 22 (found after its opening)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = '''
import torch
import torch.nn.functional as F
from torch import nn


class Scorer(nn.Module):
    def __init__(self, temperature=0.05):
        super().__init__()
        self.query = nn.Linear(4, 8)
        self.doc = nn.Linear(4, 8)
        self.temperature = temperature

    def forward(self, x, y):
        q = F.normalize(self.query(x), p=2, dim=-1)
        d = F.normalize(self.doc(y), p=2, dim=-1)
        sim = q @ d.t() / self.temperature
        labels = torch.arange(sim.size(0), device=sim.device, dtype=torch.long)
        loss = F.cross_entropy(sim, labels)
        _, pred = sim.max(dim=1)
        acc = (pred == labels).float().mean().item()
        return {"loss": loss, "accuracy": acc}


class Trainer:
    def __init__(self, model, loader, optimizer, cfg):
        self.model = model
        self.loader = loader
        self.optimizer = optimizer
        self.cfg = cfg
        self.scaler = torch.amp.GradScaler(enabled=cfg["fp16"])
        self.history = []

    def train_epoch(self):
        total = 0.0
        for step, batch in enumerate(self.loader):
            batch = {k: v.to(self.cfg["device"]) for k, v in batch.items()}
            with torch.autocast("cuda", enabled=self.cfg["fp16"]):
                out = self.model(**batch)
                loss = out["loss"] / self.cfg["accumulation"]
            self.history.append(out["accuracy"])
            self.scaler.scale(loss).backward()
            if (step + 1) % self.cfg["accumulation"] == 0:
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad()
            total += out[KEY]
        return total

    def train(self, epochs):
        for _ in range(epochs):
            self.train_epoch()


def prepare_and_train(cfg):
    model = Scorer(temperature=cfg["temperature"]).to(cfg["device"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    loader = [{"x": torch.randn(8, 4), "y": torch.randn(8, 4)}] * 4
    Trainer(model, loader, optimizer, cfg).train(cfg["epochs"])


prepare_and_train({"fp16": False, "device": "cpu", "accumulation": 2, "temperature": 0.05, "lr": 1e-3, "epochs": 2})
'''


def gl008(text: str) -> list[int]:
    return [d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"]


def test_a_number_the_forward_returns_by_key_holds_no_graph() -> None:
    assert gl008(SOURCE.replace("KEY", '"accuracy"')) == []


def test_the_loss_it_returns_by_key_still_holds_the_graph() -> None:
    text = SOURCE.replace("KEY", '"loss"')
    assert gl008(text) == [next(i for i, line in enumerate(text.splitlines(), 1) if "total += out" in line)]


def test_a_dict_returned_through_another_method_of_the_class_is_read_by_key() -> None:
    text = SOURCE.replace('        return {"loss": loss, "accuracy": acc}\n', '''        return self.pack(loss, acc)

    def pack(self, loss, acc):
        out = {"loss": loss}
        out["accuracy"] = acc
        return out
''').replace("KEY", '"accuracy"')
    assert gl008(text) == []
