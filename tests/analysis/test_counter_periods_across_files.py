"""A counter's period is followed in the code of another file too (`periods`, `Interpreter.period_counters`).

A trainer class in `trainer.py` clears at the start of each window (`if grad_accum == 0:`), counts the
micro-batches and steps and resets at the window's end; `train.py` builds it and calls `train_loop()`. The
counters whose phase paths follow were those the checked file tests: run from `train.py`, `grad_accum` had no
phase, `if grad_accum == 0:` was undecided, and the clear was read as running on any micro-batch (a certain false
GL002 on the JEN-1 and JEN-1-COMPOSER repositories of lockbox 37, kind 2). Linted on its own, the trainer's file
was silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.engine import analyse_text
from support import project_tree

TRAINER = """\
class Trainer:
    def __init__(self, model, optimizer, accum_every):
        self.model = model
        self.optimizer = optimizer
        self.accum_every = accum_every

    def train_loop(self, loader):
        grad_accum = 0
        for x in loader:
            if grad_accum == {start}:
                self.optimizer.zero_grad()
            (self.model(x).mean() / self.accum_every).backward()
            grad_accum += 1
            if grad_accum == self.accum_every:
                self.optimizer.step()
                grad_accum = 0
"""
TRAIN = """\
import torch

from trainer import Trainer


def run(model, loader):
    optimizer = torch.optim.AdamW(model.parameters())
    trainer = Trainer(model, optimizer, accum_every=4)
    trainer.train_loop(loader)
"""


def _codes(path: Path) -> list[tuple[str, bool]]:
    return [(d.code, d.possible) for d in analyse_text(path.read_text(), str(path)).diagnostics]


@pytest.mark.parametrize(("start", "expected"), [
    ("0", []),  # the first micro-batch of each window: what it clears was stepped already
    # the second: it drops the first micro-batch's gradients (and the first window's step applies them again)
    ("1", [("GL002", False), ("GL001", False)]),
])
def test_a_window_counter_of_another_file_keeps_its_period(tmp_path: Path, start: str,
                                                           expected: list[tuple[str, bool]]) -> None:
    root = project_tree(tmp_path / "p", {"trainer.py": TRAINER.format(start=start), "train.py": TRAIN})
    assert _codes(root / "trainer.py") == expected  # found in the file that holds the code, as linted alone
    # run from the script, the trainer's code says nothing more (a finding of its own file is reported there)
    assert _codes(root / "train.py") == []
    # the same code in one file says the same
    one = root / "one.py"
    one.write_text(TRAIN.replace("from trainer import Trainer\n", TRAINER.format(start=start)))
    assert _codes(one) == expected
