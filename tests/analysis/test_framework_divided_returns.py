"""A framework hook whose returned loss the framework divides by its window (`divides_returned` in the
API models: Lightning's `training_step` under automatic optimization, by `accumulate_grad_batches`):
the hook's own division by an accumulation count is GL010, at its `return`. Found by an audit of issue
13 (GL010 names Lightning's automatic accumulation)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

MODULE = """\
import torch
import lightning.pytorch as pl

class LitModel(pl.LightningModule):
    def __init__(self, accumulate_grad_batches=4):
        super().__init__()
        self.save_hyperparameters()
        {manual}
        self.net = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
{body}

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

trainer = pl.Trainer(accumulate_grad_batches=4)
"""


def found(body: str, manual: str = "pass") -> list[tuple[int, str]]:
    text = MODULE.format(body=body, manual=manual)
    return [(d.line, d.code) for d in analyse_text(text, "lit.py").diagnostics]


@pytest.mark.parametrize("body", [
    "        loss = loss / self.hparams.accumulate_grad_batches\n        return loss",
    "        return loss / self.trainer.accumulate_grad_batches",
    "        scaled = loss / self.hparams.grad_accum_steps\n        return {'loss': scaled, 'raw': loss.detach()}",
    "        loss /= self.hparams.accumulate_grad_batches\n        return loss",
])
def test_a_training_step_that_divides_its_returned_loss_by_the_window_is_gl010(body: str) -> None:
    assert [code for _line, code in found(body)] == ["GL010"]
    assert found(body)[0][0] == 14 + body.count("\n")  # the `return`


@pytest.mark.parametrize("body", [
    "        return loss",
    "        self.log('scaled', loss / self.hparams.accumulate_grad_batches)\n        return loss",
    "        loss = loss / x.size(0)\n        return loss",
    "        scaled = loss / self.hparams.accumulate_grad_batches\n        scaled = loss\n        return scaled",
])
def test_a_training_step_that_returns_its_loss_undivided_is_silent(body: str) -> None:
    assert found(body) == []


def test_manual_optimization_divides_by_hand() -> None:
    body = ("        opt = self.optimizers()\n        self.manual_backward(loss / self.hparams.accumulate_grad_batches)\n"
            "        if (batch_idx + 1) % self.hparams.accumulate_grad_batches == 0:\n"
            "            opt.step()\n            opt.zero_grad()\n        return loss")
    assert found(body, manual="self.automatic_optimization = False") == []


@pytest.mark.parametrize("configured, expected", [(4, ["GL010"]), (2, [])])
def test_a_literal_divisor_counts_when_the_trainer_is_configured_with_it(configured: int, expected: list[str]) -> None:
    text = MODULE.format(body="        return loss / 4", manual="pass").replace("accumulate_grad_batches=4)", f"accumulate_grad_batches={configured})")
    assert [d.code for d in analyse_text(text, "lit.py").diagnostics] == expected
