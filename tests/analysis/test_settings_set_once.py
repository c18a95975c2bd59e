"""A setting `__init__` stores (`self.clear = clear`) and no other method assigns holds for the whole run: where
the instance was built in sight with a literal (or the parameter's default), `if self.clear:` goes that way on
every path (`FixedTests.constant_flag`). Before, both ways were taken, and the path that skipped the clear made a
certain GL001 on a trainer built with `clear=True`."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree

TRAINER = """\
import torch


class Trainer:
    def __init__(self, model, clear=True):
        self.clear = clear
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(self, loader):
        for x, y in loader:
            if self.clear:
                self.opt.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.opt.step()
{elsewhere}

trainer = Trainer(torch.nn.Linear(4, 1){given})
trainer.train(loader)
"""


def codes(given: str, elsewhere: str = "") -> set[str]:
    return {d.code for d in analyse_text(TRAINER.format(given=given, elsewhere=elsewhere), "train.py").diagnostics}


@pytest.mark.parametrize("given, expected", [("", set()), (", clear=True", set()), (", clear=False", {"GL001"})])
def test_a_setting_built_in_sight_decides_its_tests(given: str, expected: set[str]) -> None:
    assert codes(given) == expected


def test_a_setting_another_method_changes_is_not_decided() -> None:
    changes = "\n    def pause_clearing(self):\n        self.clear = False\n"
    assert codes("", changes) == {"GL001"}


# returnn's Updater (a real-bug benchmark entry, found before and missed by the first version of this reading):
# `self.optimizer = None` in `__init__`, built by `create_optimizer()`. Which attributes other methods assign was
# computed once, from the classes of whichever module's code ran first: here `Config.float` of config.py, whose
# class assigns nothing of the kind. So `if self.optimizer:` was decided False, and the step never seen.
CONFIG = """\
class Config:
    def __init__(self):
        self.typed = {}

    def float(self, key, default):
        if key in self.typed:
            return self.typed[key]
        return default
"""
UPDATER = """\
from typing import Optional

import torch
from config import Config


class Updater:
    def __init__(self, network):
        self.config = Config()
        self.network = network
        self.optimizer = None
        self._grad_clip = self.config.float("gradient_clip", 0.0)

    def create_optimizer(self):
        self.optimizer = torch.optim.SGD(self.network.parameters(), lr=0.1)

    def step(self, grad_scaler: Optional[torch.cuda.amp.GradScaler] = None):
        if self._grad_clip:
            torch.nn.utils.clip_grad_norm_(self.network.parameters(), self._grad_clip)
        if self.optimizer:
            if grad_scaler is not None:
                grad_scaler.step(self.optimizer)
                grad_scaler.update()
            else:
                self.optimizer.step()
"""


def test_attributes_another_method_assigns_are_read_from_the_checked_module(tmp_path: Path) -> None:
    root = project_tree(tmp_path, {"config.py": CONFIG, "updater.py": UPDATER})
    report = analyse_text((root / "updater.py").read_text(), str(root / "updater.py"), Settings.default())
    assert [(d.line, d.code) for d in report.diagnostics] == [(19, "GL007")]
