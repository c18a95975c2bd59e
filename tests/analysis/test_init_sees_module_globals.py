"""A class's `__init__`, read once for the class when module-level code first builds an instance, sees the module's
globals as they are there: `accelerator.prepare(...)` in `Trainer.__init__` prepares with the module's `accelerator =
Accelerator(gradient_accumulation_steps=4)`, so the optimizer `fit` steps inside `accelerator.accumulate(...)` is that
accelerator's, gated on its window. Read before the globals were seen, `accelerator` was an object known only by its
name, the optimizer prepared by another object, and the correct loop a certain GL010 (found while modelling the
window set by attribute, lockbox 22's accmt)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = '''
import torch
from accelerate import Accelerator
from torch import nn

accelerator = Accelerator(gradient_accumulation_steps=4)


class Trainer:
    def __init__(self, model, loader):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.model, self.optimizer, self.loader = accelerator.prepare(self.model, self.optimizer, loader)

    def fit(self, epochs):
        for _ in range(epochs):
            for x, y in self.loader:
                with accelerator.accumulate(self.model):
                    loss = nn.functional.mse_loss(self.model(x), y)
                    accelerator.backward(loss)
                    self.optimizer.step()
                    self.optimizer.zero_grad()


CALL
'''


def codes(text: str) -> list[str]:
    return [d.code for d in analyse_text(text, "train.py").diagnostics]


def test_an_init_run_from_module_level_prepares_with_the_module_accelerator() -> None:
    made = "Trainer(nn.Linear(4, 1), [(torch.randn(8, 4), torch.randn(8, 1))])"
    assert codes(SOURCE.replace("CALL", f"{made}.fit(2)")) == []
    assert codes(SOURCE.replace("CALL", f"trainer = {made}\ntrainer.fit(2)")) == []


def test_the_step_outside_accumulate_is_still_found() -> None:
    text = SOURCE.replace("CALL", "Trainer(nn.Linear(4, 1), [(torch.randn(8, 4), torch.randn(8, 1))]).fit(2)").replace(
        "                with accelerator.accumulate(self.model):\n", "                if True:\n")
    assert codes(text) == ["GL010"]
