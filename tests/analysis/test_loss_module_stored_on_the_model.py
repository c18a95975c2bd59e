"""A loss module made in `main` and stored on the model (`Network(criterion)` keeps it as `self._criterion`), whose
forward returns its loss beside two numbers (`loss1.item()`, `loss2.item()`): the architect's step unpacks the
numbers from `self.model._loss(...)` and the loop logs them in an average meter. FairDARTS' search, a certain GL008 of
lockbox 34 (kind 3: floats of another file taken for tensors).

Two general facts: one object known by two holders (the loss module itself, and the model's part `_criterion`) is an
instance of its one class, so its forward is read (`class_of_module`); and where the part may be of two classes (the
loss chosen by a setting), the part is stored from a value handed in, of no class followed: what its forward returns
is not read, an assumption (`possible`), never a certain graph."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.engine import analyse_text
from support import project_tree

LOSSES = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvSeparateLoss(nn.modules.loss._Loss):
    def __init__(self, weight=0.1):
        super().__init__()
        self.weight = weight

    def forward(self, input1, target1, input2):
        loss1 = F.cross_entropy(input1, target1)
        loss2 = -F.mse_loss(input2, torch.full_like(input2, 0.5))
        return loss1 + self.weight * loss2, loss1.item(), loss2.item()


class TriSeparateLoss(ConvSeparateLoss):
    def forward(self, input1, target1, input2):
        loss1 = F.cross_entropy(input1, target1)
        loss2 = -F.l1_loss(input2, torch.full_like(input2, 0.5))
        return loss1 + self.weight * loss2, loss1.item(), loss2.item()
"""

MODEL = """\
import torch
import torch.nn as nn


class Network(nn.Module):
    def __init__(self, criterion):
        super().__init__()
        self._criterion = criterion
        self.fc = nn.Linear(4, 3)
        self.alphas = nn.Parameter(torch.zeros(3))

    def forward(self, x):
        return self.fc(x) * torch.sigmoid(self.alphas)

    def _loss(self, input1, target1, input2):
        logits = self(input1)
        return self._criterion(logits, target1, input2)

    def arch_parameters(self):
        return [self.alphas]
"""

ARCHITECT = """\
import torch


class Architect(object):
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.Adam(self.model.arch_parameters(), lr=1e-3)

    def step(self, input_valid, target_valid):
        self.optimizer.zero_grad()
        loss, loss1, loss2 = self.model._loss(input_valid, target_valid, torch.sigmoid(self.model.alphas))
        loss.backward()
        self.optimizer.step()
        return loss1, loss2
"""

METER = """\
class AverageMeter(object):
    def __init__(self):
        self.sum = 0
        self.cnt = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.cnt += n
"""

TRAIN = """\
import os

import torch

import utils
from architect import Architect
from model_search import Network
from separate_loss import ConvSeparateLoss, TriSeparateLoss


def main(sep_loss):
    criterion = CRITERION
    model = Network(criterion)
    model_optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    architect = Architect(model)
    train(model, architect, criterion, model_optimizer)


def train(model, architect, criterion, model_optimizer):
    objs, objs1 = utils.AverageMeter(), utils.AverageMeter()
    for step in range(4):
        x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
        loss1, loss2 = architect.step(x, y)
        model_optimizer.zero_grad()
        loss, _, _ = criterion(model(x), y, torch.sigmoid(model.alphas))
        loss.backward()
        model_optimizer.step()
        objs.update(loss.item(), 8)
        objs1.update(loss1, 8)


if __name__ == "__main__":
    main(os.environ.get("SEP_LOSS", "l2"))
"""


def _found(root: Path, criterion: str, losses: str = LOSSES) -> list[tuple[str, str]]:
    project_tree(root, {"separate_loss.py": losses, "model_search.py": MODEL, "architect.py": ARCHITECT,
                        "utils.py": METER, "train_search.py": TRAIN.replace("CRITERION", criterion)})
    path = root / "train_search.py"
    return [(d.code, d.certainty.value) for d in analyse_text(path.read_text(), str(path)).diagnostics]


def test_one_loss_class_known_by_two_holders_is_read(tmp_path: Path) -> None:
    assert _found(tmp_path, "ConvSeparateLoss()") == []


def test_a_loss_of_one_of_two_classes_is_an_assumption_not_a_certain_graph(tmp_path: Path) -> None:
    chosen = 'ConvSeparateLoss() if sep_loss == "l2" else TriSeparateLoss()'
    assert all(certainty == "possible" for _code, certainty in _found(tmp_path, chosen))


def test_a_loss_that_returns_its_terms_with_their_graphs_is_still_reported(tmp_path: Path) -> None:
    """The same loop when the loss module returns the terms themselves (no `.item()`): the meter keeps graphs."""
    terms = LOSSES.replace("loss1.item(), loss2.item()", "loss1, loss2")
    assert ("GL008", "certain") in _found(tmp_path, "ConvSeparateLoss()", terms)
