"""A clear in the arm of a test that runs when a loss or gradient norm is not finite drops that window on
purpose, whatever step comes later (lockbox 39: Axiom-V2's `if not torch.isfinite(grad_norm): zero_grad()
else: scaler.step(opt)`; Akabeko's `if not torch.isfinite(loss): local_bad = True; optimizer.zero_grad()`, the
boundary then skipping the step through a flag all-reduced across ranks). Before, both were certain GL002; the
clear in the arm where the value is finite is still one."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

TRAINER = """\
import torch
from torch.nn.utils import clip_grad_norm_


class Trainer:
    def __init__(self, model, optimizer, grad_accum_steps):
        self.model = model
        self.optimizer = optimizer
        self.scaler = torch.amp.GradScaler()
        self.grad_accum_steps = grad_accum_steps

    def train_step(self, x, y, is_last_accum_step=True):
        loss = torch.nn.functional.cross_entropy(self.model(x), y) / self.grad_accum_steps
        self.scaler.scale(loss).backward()
        if is_last_accum_step:
            self.scaler.unscale_(self.optimizer)
            grad_norm = clip_grad_norm_(self.model.parameters(), 1.0)
            if {test}:
                self.optimizer.zero_grad(set_to_none=True)
            else:
                self.scaler.step(self.optimizer)
            self.scaler.update()
            self.optimizer.zero_grad(set_to_none=True)
"""

WINDOW = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
skip_window = False
for step, x in enumerate(loader):
    loss = model(x).mean() / 4
    if {test}:
        skip_window = True
        optimizer.zero_grad(set_to_none=True)
    else:
        loss.backward()
    if (step + 1) % 4 == 0:
        if skip_window:
            optimizer.zero_grad(set_to_none=True)
            skip_window = False
        else:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
"""


@pytest.mark.parametrize("test", ["not torch.isfinite(grad_norm)", "torch.isnan(grad_norm) or torch.isinf(grad_norm)"])
def test_the_clear_of_a_skipped_non_finite_step(test: str) -> None:
    assert [d.code for d in check_source(TRAINER.format(test=test), "trainer.py")] == []


def test_the_clear_of_the_finite_arm_still_drops_a_window() -> None:
    # the clear runs when the norm is finite, the step on the other arm: every window that steps... never does
    found = check_source(TRAINER.format(test="torch.isfinite(grad_norm)"), "trainer.py")
    assert "GL002" in [d.code for d in found]


@pytest.mark.parametrize("test", ["not torch.isfinite(loss)", "torch.isnan(loss)"])
def test_a_window_discarded_on_a_non_finite_loss(test: str) -> None:
    assert [d.code for d in check_source(WINDOW.format(test=test), "train.py") if d.code == "GL002"] == []


def test_a_clear_on_a_finite_loss_mid_window_is_reported() -> None:
    found = check_source(WINDOW.format(test="torch.isfinite(loss)"), "train.py")
    assert "GL002" in [d.code for d in found]
