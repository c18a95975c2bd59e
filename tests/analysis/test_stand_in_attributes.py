"""A module's attributes as its class's stand-in `self` holds them, moved onto the instance a method runs on
(`stand_ins`, `Inliner._class_attributes`).

diffpool (held-out sweep: a certain GL001): each fold of a cross-validation builds one of several encoder classes
of another file and trains it with `model.zero_grad()` at the top of each batch. Past the budget of one call, a
base `__init__` was left unread on one fold; the instance's `__init__` started from the attributes of the class's
stand-in `self`, whose `self.act = nn.ReLU()` (also a layer of the prediction head) is a child of no instance.
Its gradients, filled by one fold's forward, were never cleared by the next fold's `model.zero_grad()`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from gradcheck_lint.project import context
from support import project_tree

ENCODERS = """\
    import torch.nn as nn
    import torch.nn.functional as F


    class Base(nn.Module):
        def __init__(self, d, hidden=[]):
            super(Base, self).__init__()
            self.conv_first = nn.Linear(d, d)
            self.act = nn.ReLU()
            self.pred_model = self.build_pred_layers(d, hidden)

        def build_pred_layers(self, d, hidden):
            if len(hidden) == 0:
                return nn.Linear(d, 1)
            layers = []
            for h in hidden:
                layers.append(nn.Linear(d, h))
                layers.append(self.act)
                d = h
            layers.append(nn.Linear(d, 1))
            return nn.Sequential(*layers)

        def forward(self, x):
            return self.pred_model(self.act(self.conv_first(x)))

        def loss(self, pred, y):
            return F.mse_loss(pred, y)


    class Pooled(Base):
        def __init__(self, d, hidden=[50]):
            super(Pooled, self).__init__(d, hidden)
            self.pool = nn.Linear(d, d)
            self.pred_model = self.build_pred_layers(d, hidden)

        def forward(self, x):
            return self.pred_model(self.act(self.pool(self.conv_first(x))))

        def loss(self, pred, y):
            return super(Pooled, self).loss(pred, y)
"""
TRAIN = """\
    import torch
    import encoders


    def train(dataset, model):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for x, y in dataset:
            CLEAR
            loss = model.loss(model(x), y)
            loss.backward()
            optimizer.step()


    def cross_validate(method, data):
        for fold in range(10):
            if method == "pooled":
                model = encoders.Pooled(4)
            else:
                model = encoders.Base(4)
            train(data, model)
"""


@pytest.mark.parametrize(("clear", "expected"), [("model.zero_grad()", []), ("pass", [("GL001", 11, False)])])
def test_an_instance_built_past_the_budget_owns_the_attributes_its_class_sets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clear: str, expected: list[tuple[str, int, bool]]) -> None:
    monkeypatch.setattr(context, "FOREIGN_CALL_BUDGET", 20)
    root = project_tree(tmp_path, {"encoders.py": ENCODERS, "train.py": TRAIN.replace("CLEAR", clear)})
    script = root / "train.py"
    report = analyse_text(script.read_text(), str(script), Settings.default(), project=True)
    assert [(d.code, d.line, d.possible) for d in report.diagnostics] == expected
