"""An optimizer prepared through a name that may hold either of two accelerators (`self.accelerator = preinit_acc` when
one is handed in, else `Accelerator()`) follows the gates of whichever of them the code enters on each path: stepped
under `with self.accelerator.accumulate(self.model):`, it steps on window boundaries only. Taking the first preparer
for the only one made a correct loop a certain GL010 (TartuNLP's trainer on the development sweep, once the window set
by attribute was read)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = '''
import torch
from accelerate import Accelerator
from torch import nn


class SwitchingTrainer:
    def __init__(self, model, loader, accum_steps, preinit_acc=None):
        self.model = model
        self.loader = loader
        if preinit_acc is None:
            self.accelerator = Accelerator()
        else:
            self.accelerator = preinit_acc
        self.accelerator.gradient_accumulation_steps = accum_steps
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.optimizer, self.model = self.accelerator.prepare(opt, self.model)

    def train(self, epochs):
        for _ in range(epochs):
            for x, y in self.loader:
                CONTEXT
                    loss = nn.functional.mse_loss(self.model(x), y)
                    self.accelerator.backward(loss)
                    self.optimizer.step()
                    self.optimizer.zero_grad()


def main():
    accelerator = Accelerator()
    loader = [(torch.randn(8, 4), torch.randn(8, 1))] * 4
    SwitchingTrainer(nn.Linear(4, 1), loader, 8, preinit_acc=accelerator).train(2)


main()
'''


def gl010(text: str) -> list[int]:
    return [d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL010"]


def test_the_step_under_the_accumulate_of_either_accelerator_is_gated() -> None:
    assert gl010(SOURCE.replace("CONTEXT", "with self.accelerator.accumulate(self.model):")) == []


def test_the_step_outside_accumulate_is_still_found() -> None:
    assert gl010(SOURCE.replace("CONTEXT", "if True:")) != []
