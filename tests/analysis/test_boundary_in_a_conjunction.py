"""`if self.accelerator.sync_gradients and self.clip_grad_norm is not None:` inside `accelerator.accumulate(...)`: the
conjunction holds only on the micro-batch that ends the window, whatever name the accelerator goes by where the test
reads it (`self.accelerator` of an `accelerator` the script made). Keyed by its text, the operand was not the boundary
the prepared optimizer's step fires on, and the clip was said to run on every micro-batch (vilmedic's trainer,
lockbox 34: a certain GL007). A clip under a test of the setting alone still runs on every micro-batch."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

TRAINER = """\
import torch
from accelerate import Accelerator


class Trainor:
    def __init__(self, model, dl, accelerator, clip_grad_norm=None):
        self.accelerator = accelerator
        self.clip_grad_norm = clip_grad_norm
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.model, self.optimizer, self.dl = self.accelerator.prepare(model, optimizer, dl)

    def train_epoch(self):
        for iteration, batch in enumerate(self.dl, start=1):
            with self.accelerator.accumulate(self.model):
                loss = self.model(batch).mean()
                self.accelerator.backward(loss)
                if {test}:
                    self.accelerator.clip_grad_norm_(self.model.parameters(), self.clip_grad_norm)
                self.optimizer.step()
                self.optimizer.zero_grad()


def main(grad_accu_steps):
    accelerator = Accelerator(gradient_accumulation_steps=grad_accu_steps)
    Trainor(torch.nn.Linear(4, 1), [torch.randn(2, 4)] * 8, accelerator, clip_grad_norm=1.0).train_epoch()


main(4)
"""


def gl007(test: str) -> list[int]:
    return [d.line for d in check_source(TRAINER.format(test=test)) if d.code == "GL007"]


@pytest.mark.parametrize("test", [
    "self.accelerator.sync_gradients",
    "self.accelerator.sync_gradients and self.clip_grad_norm is not None",
    "self.clip_grad_norm is not None and self.accelerator.sync_gradients",
])
def test_a_clip_under_the_boundary_runs_once_per_window(test: str) -> None:
    assert gl007(test) == []


def test_a_clip_under_a_setting_alone_runs_on_every_micro_batch() -> None:
    assert gl007("self.clip_grad_norm is not None") == [18]
