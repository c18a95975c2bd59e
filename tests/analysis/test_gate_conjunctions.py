"""A step gate's conjunct that reads neither the counter nor the window (`self.optimizer is not None and (self.step
+ 1) % self.update_every == 0`) decides whether a step runs at all, not when in the window: the window arithmetic
reads the modulo test (fastNLP's trainer, lockbox 8: a missed GL004)."""

from __future__ import annotations

import pytest

from gradcheck_lint.api import check_source

TRAINER = '''
import torch


class Trainer:
    def __init__(self, model, optimizer, update_every):
        self.model = model
        self.optimizer = optimizer
        self.update_every = update_every
        self.step = 0

    def train(self, loader, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                self.step += 1
                loss = torch.nn.functional.mse_loss(self.model(x), y) / self.update_every
                loss.backward()
                self._update()

    def _update(self):
        if self.optimizer is not None and (self.step + 1) % self.update_every == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()
'''
GATE = "self.optimizer is not None and (self.step + 1) % self.update_every == 0"


@pytest.mark.parametrize("gate", [GATE, "(self.step + 1) % self.update_every == 0 and self.optimizer is not None"])
def test_the_counter_part_of_a_conjunction_is_read(gate: str) -> None:
    assert [(d.code, d.line) for d in check_source(TRAINER.replace(GATE, gate))] == [("GL004", 21)]


def test_the_right_gate_in_a_conjunction_is_clean() -> None:
    assert check_source(TRAINER.replace(GATE, "self.optimizer is not None and self.step % self.update_every == 0")) == []


# fastNLP's split: the clear in a helper of its own, under the counter's window start; the step alone under the gate
SPLIT = TRAINER.replace("""                loss.backward()
                self._update()""", """                self._grad_backward(loss)
                self._update()""").replace("""    def _update(self):""", """    def _grad_backward(self, loss):
        if self.step % self.update_every == 0:
            self.model.zero_grad()
        loss.backward()

    def _update(self):""").replace("""            self.optimizer.step()
            self.optimizer.zero_grad()""", """            self.optimizer.step()""")


def test_a_clear_at_the_window_start_and_a_conjoined_step_gate_are_one_window() -> None:
    """fastNLP: the clear under `self.step % N == 0` opens each window the step under `... and (self.step + 1) % N
    == 0` closes (the conjunct about the optimizer holds alike on every micro-batch): no GL002, the GL004 stays."""
    assert "_grad_backward" in SPLIT and [d.code for d in check_source(SPLIT)] == ["GL004"]
    # the step moved onto the clear's micro-batch: the clear now drops the window the step was about to apply
    wrong = SPLIT.replace("(self.step + 1) % self.update_every == 0", "self.step % self.update_every == 0")
    assert [d.code for d in check_source(wrong)] == ["GL002"]
