"""A missing clear only on the path where a flag parameter is off its literal default is an assumption.

VHL's `NormalTrainer.train_one_epoch(..., clear_grad_bef_opt=True, ...)` clears under `if clear_grad_bef_opt:`,
and no caller passes the flag (lockbox 15, a certain GL001 false alarm found after its opening). The method runs
with its arguments out of sight, so both arms are read; the one without the clear exists only if some caller
passes `False`. A finding that needs it is `possible`; one on the default's own path stays `certain`."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> set[tuple[str, str]]:
    return {(d.code, d.certainty) for d in analyse_text(text, "trainer.py").diagnostics}


TRAINER = """\
import torch


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)

    def train_one_epoch(self, loader, clear_grad={default}):
        for x, y in loader:
            if {test}:
                self.optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
"""


def test_no_clear_only_off_the_default_is_possible():
    assert found(TRAINER.format(default="True", test="clear_grad")) == {("GL001", "possible")}


def test_the_same_with_the_test_negated():
    assert found(TRAINER.format(default="False", test="not clear_grad")) == {("GL001", "possible")}


def test_no_clear_on_the_default_path_stays_certain():
    assert found(TRAINER.format(default="False", test="clear_grad")) == {("GL001", "certain")}
