"""A clear inside a framework's automatic hook (`analysis/hook_clears.py`): the framework steps and clears
once per accumulation window, the hook's own `zero_grad()` runs on every micro-batch (GL002, possible).
Found by an audit of issue 12 (HF `Trainer.training_step` overrides, Lightning automatic optimization)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

HF = """\
from transformers import Trainer


class MyTrainer(Trainer):
    def training_step(self, model, inputs, num_items_in_batch=None):
        model.train()
        loss = self.compute_loss(model, inputs)
{extra}
        loss.backward()
        return loss.detach()
"""

LIGHTNING = """\
import torch
import lightning.pytorch as pl


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
{init}

    def training_step(self, batch, batch_idx):
        loss = self.net(batch).pow(2).mean()
{extra}
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""


def found(text: str) -> list[tuple[int, str, str]]:
    return [(d.line, d.code, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics]


@pytest.mark.parametrize("clear", ["self.optimizer.zero_grad()", "model.zero_grad()"])
def test_a_trainer_override_that_clears_is_gl002_possible(clear: str) -> None:
    assert found(HF.format(extra=f"        {clear}")) == [(8, "GL002", "possible")]


def test_a_trainer_override_that_steps_itself_owns_its_clear() -> None:
    extra = "        self.optimizer.zero_grad()\n        self.optimizer.step()"
    assert not any(code == "GL002" and line == 8 for line, code, _ in found(HF.format(extra=extra)))


def test_a_trainer_override_that_does_not_clear_is_silent() -> None:
    assert found(HF.format(extra="        pass")) == []


def test_lightning_automatic_clear_is_gl002_and_manual_is_not() -> None:
    assert found(LIGHTNING.format(init="", extra="        self.zero_grad()")) == [(13, "GL002", "possible")]
    manual = LIGHTNING.format(init="        self.automatic_optimization = False", extra="        self.zero_grad()")
    assert not any(code == "GL002" for _l, code, _ in found(manual))
