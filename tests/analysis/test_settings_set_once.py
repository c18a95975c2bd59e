"""A setting `__init__` stores (`self.clear = clear`) and no other method assigns holds for the whole run: where
the instance was built in sight with a literal (or the parameter's default), `if self.clear:` goes that way on
every path (`FixedTests.constant_flag`). Before, both ways were taken, and the path that skipped the clear made a
certain GL001 on a trainer built with `clear=True`."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

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
