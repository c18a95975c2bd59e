"""A type test of a setting (`isinstance(self.optimizer, torch.optim.LBFGS)`, the optimizer set once in `__init__`)
goes the same way on every call: a run is an L-BFGS run or not. ludwig's trainer returns into an L-BFGS step on one
side and scales an AMP backward on the other; no call mixes the two (a certain GL007 of lockbox 8, and two GL001s
here). When another method may swap the optimizer, each call decides anew, as before."""

from __future__ import annotations

from gradcheck_lint.api import check_source

TRAINER = '''
import torch


class Trainer:
    def __init__(self, model, use_amp, lbfgs):
        self.model = model
        self.use_amp = use_amp
        self.scaler = torch.cuda.amp.GradScaler() if use_amp else None
        if lbfgs:
            self.optimizer = torch.optim.LBFGS(model.parameters())
        else:
            self.optimizer = torch.optim.Adam(model.parameters())

    def train_step(self, x, y, should_step):
        if isinstance(self.optimizer, torch.optim.LBFGS):
            return self._train_step_lbfgs(x, y)
        loss = torch.nn.functional.mse_loss(self.model(x), y) / 4
        if self.use_amp:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()
        if not should_step:
            return loss
        if self.use_amp:
            self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        if self.use_amp:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad()
        return loss

    def _train_step_lbfgs(self, x, y):
        def closure():
            self.optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            return loss

        self.optimizer.step(closure)
        return torch.nn.functional.mse_loss(self.model(x), y)

    def train(self, loader):
        for i, (x, y) in enumerate(loader):
            self.train_step(x, y, (i + 1) % 4 == 0)
'''

SWAP = """
    def swap(self, opt):
        self.optimizer = opt

    def train(self, loader):"""


def test_a_type_test_of_a_setting_is_decided_once_per_run() -> None:
    assert [d.code for d in check_source(TRAINER)] == []


def test_an_attribute_another_method_assigns_is_no_setting() -> None:
    swapped = TRAINER.replace("\n    def train(self, loader):", SWAP)
    assert swapped != TRAINER
    assert [d.code for d in check_source(swapped)] == ["GL001", "GL001"]
