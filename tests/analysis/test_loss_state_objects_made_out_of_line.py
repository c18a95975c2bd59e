"""GL008 on a loss object that keeps a running average of a graph-carrying loss (peal's GroupDRO
`LossComputer`: `self.exp_avg_loss = self.exp_avg_loss * w + group_loss * (1 - w)`), reached the ways the real
trainer reaches it. Each way alone hid the finding:
- the objects are made by a lambda factory (`construct = lambda cr: LossComputer(cr, 4)`), as a nested `def` is;
- they are stored in a dict under a key from a loop over config keys (`crits[key] = construct(...)`);
- the step walks the dict by key (`for c in crits: crits[c].loss(...)`), a loop over one value's entries inside
  the training loop, not a loop of its own;
- the average is updated two calls deep in another file (`loss` calls `update`, both in `losses.py`): the finding is
  anchored back through the calls to the checked file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree

LOSS_COMPUTER = """\
import torch
from torch import nn


class LossComputer:
    def __init__(self, criterion, n_groups):
        self.criterion = criterion
        self.exp_avg_loss = torch.zeros(n_groups)

    def loss(self, yhat, y):
        per_sample = self.criterion(yhat, y)
        self.update(per_sample[:4])
        return per_sample.mean()

    def update(self, group_loss):
        self.exp_avg_loss = self.exp_avg_loss * 0.9 + group_loss * 0.1
"""

ADAPTOR = """\
class Adaptor:
    def __init__(self, keys):
        self.model = nn.Linear(8, 3)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.train_criterions = {{}}
{make}

    def run_epoch(self, loader, loss_criterions):
        for x, y in loader:
            self.optimizer.zero_grad()
            pred = self.model(x)
{walk}
            loss.backward()
            self.optimizer.step()

    def fit(self, loader, epochs):
        for _ in range(epochs):
            self.run_epoch(loader, self.train_criterions)
"""

LAMBDA_UNDER_LOOP_KEY = """\
        construct = lambda cr: LossComputer(cr, 4)
        for key in keys:
            self.train_criterions[key] = construct(nn.CrossEntropyLoss(reduction="none"))"""
BY_KEY = """\
            for criterion in loss_criterions:
                loss = loss_criterions[criterion].loss(pred, y)"""
BY_ITEMS = """\
            for criterion, computer in loss_criterions.items():
                loss = computer.loss(pred, y)"""


def _gl008(text: str) -> list[int]:
    return [d.span.line for d in check_source(text, "train.py", settings=Settings.default()) if d.code == "GL008"]


def _update_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if "self.exp_avg_loss * 0.9" in line)


@pytest.mark.parametrize("walk", [BY_KEY, BY_ITEMS], ids=["dict-by-key", "items"])
def test_a_lambda_made_loss_object_stored_under_a_loop_key_is_followed(walk: str) -> None:
    text = LOSS_COMPUTER + "\n\n" + ADAPTOR.format(make=LAMBDA_UNDER_LOOP_KEY, walk=walk)
    assert _gl008(text) == [_update_line(text)]


def test_the_same_object_detached_is_silent() -> None:
    text = (LOSS_COMPUTER + "\n\n" + ADAPTOR.format(make=LAMBDA_UNDER_LOOP_KEY, walk=BY_KEY)).replace(
        "group_loss * 0.1", "group_loss.detach() * 0.1")
    assert _gl008(text) == []


def test_a_finding_two_calls_deep_in_another_file_is_anchored_at_the_call_here(tmp_path: Path) -> None:
    loop = textwrap.dedent("""\
        import torch
        from torch import nn

        from losses import LossComputer

        model = nn.Linear(8, 3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        computer = LossComputer(nn.CrossEntropyLoss(reduction="none"), 4)
        for x, y in zip(torch.randn(50, 16, 8), torch.randint(0, 3, (50, 16))):
            optimizer.zero_grad()
            loss = computer.loss(model(x), y)
            loss.backward()
            optimizer.step()
    """)
    root = project_tree(tmp_path, {"losses.py": LOSS_COMPUTER, "train.py": loop})
    report = analyse_text(loop, str(root / "train.py"), Settings.default())
    found = [d for d in report.diagnostics if d.code == "GL008"]
    assert [d.span.line for d in found] == [11]
    related = [(Path(e.path).name, e.span.line) for d in found for e in d.related]
    assert ("losses.py", _update_line(LOSS_COMPUTER)) in related
