"""A clear of a model discards what an optimizer built out of sight steps only if that optimizer owns what the clear
covers: when its parameters are not known, that is assumed, so GL002 on such a clear is `possible` (FL-bench's
clients freeze the base or the head between backward and step on purpose, and step on the rest: 8 certain false
alarms of lockbox 9, found after its opening)."""

from __future__ import annotations

import pytest

from gradcheck_lint.api import check_source
from gradcheck_lint.diagnostics import Certainty

CLIENT = '''
from flcore.client import Client


class FedRepClient(Client):
    def fit(self, train_body_epoch):
        self.model.train()
        for E in range(self.local_epoch):
            for x, y in self.trainloader:
                logit = self.model(x)
                loss = self.criterion(logit, y)
                self.optimizer.zero_grad()
                loss.backward()
                if E < self.local_epoch - train_body_epoch:
                    self.model.base.zero_grad()
                else:
                    self.model.classifier.zero_grad()
                self.optimizer.step()
'''

KNOWN = CLIENT.replace("from flcore.client import Client\n", "import torch\n\n\nclass Client:\n"
                       "    def __init__(self, model):\n        self.model = model\n"
                       "        self.optimizer = torch.optim.SGD(self.model.base.parameters(), lr=0.1)\n")


def test_a_partial_clear_of_a_model_an_unseen_optimizer_steps_is_possible() -> None:
    found = [(d.code, d.line, d.certainty) for d in check_source(CLIENT)]
    assert found == [("GL002", 15, Certainty.POSSIBLE), ("GL002", 17, Certainty.POSSIBLE)]


def test_a_clear_of_what_a_known_optimizer_steps_is_certain() -> None:
    """The optimizer is built in sight over `self.model.base`: clearing the base leaves its step nothing."""
    # (the classifier's clear, line 23, touches nothing the optimizer steps: not reported)
    assert [(d.code, d.line, d.certainty) for d in check_source(KNOWN)] == [("GL002", 21, Certainty.CERTAIN)]


# A clear of a value the analysis cannot make out at all (an item of a list handed in) was taken to clear what
# the optimizer of unknown parameters steps, and reported as certain: knn-per freezes the modules it is given
# (lockbox 15, development material now). That it clears them is the assumption; the finding is `possible`.
HANDED = '''
import torch


class Learner:
    def __init__(self, model, criterion, optimizer):
        self.model = model
        self.criterion = criterion
        self.optimizer = optimizer

    def fit_epoch(self, iterator, frozen_modules=None):
        if frozen_modules is None:
            frozen_modules = []
        self.model.train()
        for x, y in iterator:
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x), y).mean()
            loss.backward()
            for frozen_module in frozen_modules:
                frozen_module.zero_grad()
            self.optimizer.step()
'''


def test_a_clear_of_an_object_not_made_out_is_possible() -> None:
    assert [(d.code, d.line, d.certainty) for d in check_source(HANDED)] == [("GL002", 20, Certainty.POSSIBLE)]


def test_a_clear_of_the_optimizer_itself_stays_certain() -> None:
    """The same loop clearing `self.optimizer` between backward and step: what it clears is what it steps."""
    text = HANDED.replace("            for frozen_module in frozen_modules:\n                frozen_module.zero_grad()\n",
                          "            self.optimizer.zero_grad()\n")
    assert [(d.code, d.line, d.certainty) for d in check_source(text)] == [("GL002", 19, Certainty.CERTAIN)]


# The mirror case: a loop run with an optimizer of unknown parameters (a trainer handed `Optimizer`, the class,
# or an object made out of sight) steps and clears it, and the caller then steps its own optimizer over the
# model. That the handed optimizer's clear drops the model's gradients rests on its owning them (taken from its
# steps having applied them): assumed, so GL002 is `possible` (lockbox 37's Lungs_Disease_Diagnosis, certain).
HANDED_OPTIMIZER = '''
import torch
import torch.nn.functional as F
from torch.optim import Optimizer


class ModelTrainer:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader

    def train(self, optimizer):
        for data, target in self.loader:
            optimizer.zero_grad()
            loss = F.nll_loss(self.model(data), target)
            loss.backward()
            optimizer.step()

    def run(self, epochs):
        optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for epoch in range(epochs):
            self.train(optimizer=HANDED)
            optimizer.step()
'''


@pytest.mark.parametrize("handed", ["Optimizer", "self.other_optimizer", "make_optimizer()"])
def test_a_clear_of_a_handed_optimizer_of_unknown_parameters_is_possible(handed: str) -> None:
    found = [(d.code, d.line, d.certainty) for d in check_source(HANDED_OPTIMIZER.replace("HANDED", handed))]
    assert found == [("GL002", 14, Certainty.POSSIBLE)]


def test_the_caller_handing_its_own_optimizer_clears_its_own_gradients() -> None:
    """Handed the caller's own optimizer, the clear is of what it steps (no GL002); the caller's second step then
    applies the last batch's gradients again (GL001, certain)."""
    found = [(d.code, d.line, d.certainty) for d in check_source(HANDED_OPTIMIZER.replace("HANDED", "optimizer"))]
    assert found == [("GL001", 23, Certainty.CERTAIN)]
