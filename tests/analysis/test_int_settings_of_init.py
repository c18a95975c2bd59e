"""An attribute only `__init__` sets, to a literal int (`self.mode = 18`), is a setting for the whole run, not a
counter's start: `if self.mode == 0:` and `if self.mode:` go one way in every method (easyrobust's inversion
attack, whose backward and step run only under `self.gaijin == 0` with `__init__` fixing it at 18). A method that
changes it, or a counter counted up, keeps both arms."""

import pytest

from support import lines_of

ATTACK = """
import torch


class Optimization:
    def __init__(self, target, synthesis):
        self.target = target
        self.synthesis = synthesis
        self.mode = {mode}

    def optimize(self, w, targets, epochs):
        optimizer = torch.optim.Adam([w.requires_grad_()])
        for i in range(epochs):
            loss = self.target(self.synthesis(w)).sum()
            if self.mode == 0:
                loss.backward()
                optimizer.step()
            if self.mode:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
{changer}

def attack(w, targets, target, synthesis):
    return Optimization(target, synthesis).optimize(w, targets, 10)
"""
CHANGER = """
    def switch(self):
        self.mode = 0
"""


@pytest.mark.parametrize("mode, changer, reported", [
    ("18", "", False),  # only the `if self.mode:` arm runs, and it clears before its backward
    ("0", "", True),    # only the `== 0` arm runs: nothing ever clears
    ("18", CHANGER, True),  # another method sets it: the `== 0` arm may run
], ids=["fixed-at-18", "fixed-at-0", "changed-elsewhere"])
def test_an_int_only_init_sets_decides_its_tests(mode: str, changer: str, reported: bool) -> None:
    found = lines_of("GL001", ATTACK.format(mode=mode, changer=changer))
    assert bool(found) == reported, found
