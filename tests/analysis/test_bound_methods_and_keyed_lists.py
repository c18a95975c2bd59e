"""Two ways a loss reaches an accumulator out of the usual sight (plato's pisces trainer, lockbox 12): a method of
`self` kept as a value and called later (`self._loss_criterion = self.get_loss_criterion()`, which returns
`self.process_loss`), and a list of a dict of lists under a key the code passes in (`self._metrics[name].append(v)`)."""

from __future__ import annotations

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

ALIAS = """\
import torch


class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.history = []

    def process_loss(self, outputs, labels):
        loss = torch.nn.functional.mse_loss(outputs, labels)
        self.history.append({stored})
        return loss

    def get_loss_criterion(self):
        return self.process_loss

    def train_model(self, loader):
        {bind}
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = {call}(self.model(x), y)
            loss.backward()
            self.optimizer.step()
"""

KEYED = """\
from collections import defaultdict

import torch


class History:
    def __init__(self):
        self._metrics = defaultdict(list)

    def update_metric(self, name, value):
        self._metrics[name].append(value)


def fit(opt, loader, hist):
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        hist.update_metric("loss", {stored})


net = torch.nn.Linear(4, 1)
fit(torch.optim.SGD(net.parameters(), lr=0.1), [(torch.randn(2, 4), torch.randn(2, 1))] * 3, History())
"""


def _found(text: str) -> set[tuple[int, str, str]]:
    report = analyse_text(text, "t.py", Settings.default().with_enabled(frozenset({"GL008"})))
    return {(d.line, d.code, d.certainty.value) for d in report.diagnostics}


@pytest.mark.parametrize(("bind", "call"), [
    ("self._loss_criterion = self.get_loss_criterion()", "self._loss_criterion"),  # returned by a method
    ("self._loss_criterion = self.process_loss", "self._loss_criterion"),  # stored on self
    ("crit = self.process_loss", "crit"),  # kept in a local
])
def test_a_method_kept_as_a_value_runs_where_it_is_called(bind: str, call: str) -> None:
    assert _found(ALIAS.format(stored="loss", bind=bind, call=call)) == {(12, "GL008", "certain")}
    assert _found(ALIAS.format(stored="loss.item()", bind=bind, call=call)) == set()


def test_a_list_of_a_dict_under_a_key_passed_in_keeps_what_is_appended() -> None:
    assert _found(KEYED.format(stored="loss")) == {(11, "GL008", "certain")}
    assert _found(KEYED.format(stored="loss.item()")) == set()
