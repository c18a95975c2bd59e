"""A base class's training loop run with a subclass as `self` (`analysis/inherited_loops.py`): the hooks the loop
calls are the subclass's overrides, in this file or across files, also when the subclass has the base's name
(`class Trainer(basic.Trainer)`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree


def _found(path: Path) -> set[tuple[int, str, str]]:
    report = analyse_text(path.read_text(), str(path), Settings.default())
    return {(d.line, d.code, d.certainty.value) for d in report.diagnostics}


BASE = """\
import torch


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step_end(self, batch, loss):
        pass

    def train_model(self, loader, epochs):
        for epoch in range(epochs):
            for batch, (x, y) in enumerate(loader):
                self.optimizer.zero_grad()
                loss = torch.nn.functional.mse_loss(self.model(x), y)
                loss.backward()
                self.optimizer.step()
                self.train_step_end(batch, loss)
"""

SUBCLASS = """\
import torch
from trainers import basic


class Trainer(basic.Trainer):
    def __init__(self, model):
        super().__init__(model)
        self.loss_dict = {{}}

    def train_step_end(self, batch, loss):
        self.loss_dict[batch] = {stored}
"""


@pytest.mark.parametrize(("stored", "expected"), [
    ("torch.square(loss)", {(11, "GL008", "certain")}),  # every batch's graph, kept for the whole run
    ("torch.square(loss).item()", set()),
])
def test_a_hook_overridden_in_another_file_runs_inside_the_base_loop(tmp_path: Path, stored: str,
                                                                     expected: set[tuple[int, str, str]]) -> None:
    root = project_tree(tmp_path / "p", {"trainers/__init__.py": "", "trainers/basic.py": BASE,
                                         "oort.py": SUBCLASS.format(stored=stored)})
    assert _found(root / "oort.py") == expected
    assert _found(root / "trainers" / "basic.py") == set()  # the base's own hook keeps nothing


ONE_FILE = """\
import torch


class BaseTrainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.history = []

    def record(self, loss):
        self.history.append(loss.item())

    def fit(self, loader):
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            self.record(loss)


class VerboseTrainer(BaseTrainer):
    def record(self, loss):
        self.history.append(loss)
"""


def test_a_hook_overridden_in_the_same_file_runs_inside_the_base_loop(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"t.py": ONE_FILE})
    assert _found(root / "t.py") == {(24, "GL008", "certain")}
