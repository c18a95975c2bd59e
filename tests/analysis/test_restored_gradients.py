"""Gradients saved before a clear and written back by a helper out of sight (the catalogue's `restore_grads` effect,
known by the method's name: `restore_grad`, `restore_grads`, `load_grad`...).

Adversarial training (PGD) backs the window's gradients up, runs its attack passes each after a clear, and writes
the backup back before the last pass: the clears drop nothing the step needed (ClinicalTransformerNER, lockbox 31: a
certain GL002 on `model.zero_grad()` inside the attack loop, the PGD helper built in another file and handed in). A
clear whose gradients nothing restores is still reported."""

from __future__ import annotations

import pytest

from support import lines_of

ADVERSARIAL = """\
import torch


def adversarial_step(trainer, model, x, k=3):
    trainer.backup_grad()
    for t in range(k):
        trainer.attack(is_first_attack=(t == 0))
        if t != k - 1:
            model.zero_grad()
        else:
            trainer.{restore}()
        loss_adv = model(x).pow(2).mean()
        loss_adv.backward()
    trainer.restore()


def train(model, trainer, loader, accum=4):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, x in enumerate(loader):
        loss = model(x).pow(2).mean() / accum
        loss.backward()
        adversarial_step(trainer, model, x)
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
CLEAR = 9  # the line of `model.zero_grad()` in the attack loop


@pytest.mark.parametrize("restore", ["restore_grad", "restore_grads", "load_grad", "restoreGrad"])
def test_a_clear_whose_gradients_a_helper_writes_back_discards_nothing(restore: str) -> None:
    assert lines_of("GL002", ADVERSARIAL.format(restore=restore)) == []


@pytest.mark.parametrize("restore", ["restore", "recover_params", "attack"])
def test_a_clear_nothing_restores_is_still_reported(restore: str) -> None:
    assert lines_of("GL002", ADVERSARIAL.format(restore=restore)) == [CLEAR]
