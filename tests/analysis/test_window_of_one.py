"""A window whose length is 1 where the gate is read (`accumulation_steps = 1` above the loop, a literal `% 1`) is no
window: `(i + 1) % 1 == 0` holds on every micro-batch, each backward is followed by its step. PPG-Distill's trainer
(lockbox 36) kept the accumulation scaffolding with a local `accumulation_steps = 1`: no GL003, no GL006."""

from __future__ import annotations

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

TRAINER = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, optim, loader):
        self.model = DDP(model)
        self.optim = optim
        self.loader = loader

    def fit(self, {params}):
        {setup}
        for i, (x, y) in enumerate(self.loader):
            if i % accumulation_steps == 0:
                self.optim.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            if (i + 1) % accumulation_steps {op} 0:
                self.optim.step()
                self.optim.zero_grad()
"""


def _found(params: str, setup: str, op: str = "==") -> set[tuple[int, str]]:
    text = TRAINER.format(params=params, setup=setup, op=op)
    report = analyse_text(text, "t.py", Settings.default().with_enabled(frozenset({"GL003", "GL006"})))
    return {(d.line, d.code) for d in report.diagnostics if d.certainty == "certain"}


@pytest.mark.parametrize("setup", ["accumulation_steps = 1", "accumulation_steps = 1  # no accumulation for now"])
def test_a_local_window_of_one_steps_on_every_micro_batch(setup: str) -> None:
    assert _found("epochs=1", setup) == set()


@pytest.mark.parametrize(("params", "setup"), [
    ("accumulation_steps=1", "pass"),  # a parameter: callers may hand any window
    ("epochs=1", "accumulation_steps = 4"),
    ("epochs=1", "accumulation_steps = 1; accumulation_steps = 2 * accumulation_steps"),
])
def test_a_window_that_may_be_longer_still_accumulates(params: str, setup: str) -> None:
    assert _found(params, setup) == {(17, "GL003"), (17, "GL006")}


def test_the_negated_gate_of_a_window_of_one_never_steps() -> None:
    # `!= 0` of a window of one is never true: the step never runs, nothing to compare with
    assert _found("epochs=1", "accumulation_steps = 1", op="!=") == set()


DIVIDED = """\
import torch


def train(model, optimizer, loader, accumulation_steps):
    for bi, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        (loss / accumulation_steps).backward()
        if (bi + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def main(model, optimizer, loader):
    accumulation_steps = {window}
    train(model, optimizer, loader, accumulation_steps)


def plain(model, optimizer, loader):
    accumulation_steps = {window}
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss /= accumulation_steps
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_loss_divided_by_a_window_of_one_is_not_divided() -> None:
    # Contact_GNN (lockbox 36): `accumulation_steps = 1` handed to the trainer; once its gate was read as always
    # true, `loss / accumulation_steps` was said to make every step N times too small (GL010), yet N is 1
    report = analyse_text(DIVIDED.format(window=1), "t.py", Settings.default())
    assert [(d.line, d.code) for d in report.diagnostics] == []


def test_a_loss_divided_by_a_longer_window_that_never_accumulates_is_reported() -> None:
    report = analyse_text(DIVIDED.format(window=4), "t.py", Settings.default())
    assert [(d.line, d.code) for d in report.diagnostics] == [(23, "GL010")]
