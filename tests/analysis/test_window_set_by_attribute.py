"""Accelerate's window set after construction: `accelerator.gradient_accumulation_steps = n` (the property's setter
writes the GradientState's `num_steps`, which `accelerator.backward` divides by) configures the window as the
constructor's keyword does; the catalogue says so (`set_window`). A lockbox-22 bug (accmt, GL010) was missed: the
window was read from the constructor only. Set to 1, there is no window."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = '''
import torch
from accelerate import Accelerator
from torch import nn

accelerator = Accelerator()


class Trainer:
    def __init__(self, model, loader, grad_accumulation_steps):
        accelerator.gradient_accumulation_steps = WINDOW
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.model, self.optimizer, self.loader = accelerator.prepare(self.model, self.optimizer, loader)

    def fit(self, epochs):
        for _ in range(epochs):
            for x, y in self.loader:
                LOOP


Trainer(nn.Linear(4, 1), [(torch.randn(8, 4), torch.randn(8, 1))], 4).fit(2)
'''

EVERY_BATCH = """loss = nn.functional.mse_loss(self.model(x), y)
                accelerator.backward(loss)
                self.optimizer.step()
                self.optimizer.zero_grad()"""

IN_ACCUMULATE = """with accelerator.accumulate(self.model):
                    loss = nn.functional.mse_loss(self.model(x), y)
                    accelerator.backward(loss)
                    self.optimizer.step()
                    self.optimizer.zero_grad()"""


def codes(text: str) -> list[str]:
    return [d.code for d in analyse_text(text, "train.py").diagnostics]


def test_a_window_set_by_attribute_divides_the_backward() -> None:
    assert codes(SOURCE.replace("WINDOW", "grad_accumulation_steps").replace("LOOP", EVERY_BATCH)) == ["GL010"]


def test_inside_accumulate_the_window_is_right() -> None:
    assert codes(SOURCE.replace("WINDOW", "grad_accumulation_steps").replace("LOOP", IN_ACCUMULATE)) == []


def test_a_window_of_one_divides_nothing() -> None:
    assert codes(SOURCE.replace("WINDOW", "1").replace("LOOP", EVERY_BATCH)) == []
