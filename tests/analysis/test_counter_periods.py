"""Periods of counters (`analysis/periods.py`): a test of a counter against the value it was reset to
holds on the first micro-batch of the counter's period only (an epoch for `enumerate`, a task for a
counter reset per task), so a clear under it is not a clear inside an accumulation window."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis import periods
from gradcheck_lint.analysis.gradstate import PathState

EPOCHS = """\
import torch
from torch import nn


def train(model, loader, accum, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    global_step = 0
    for epoch in range(epochs):
{loop}
            if {test}:
                optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y) / accum
            loss.backward()
{after}
            if (global_step + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
            global_step += 1
"""
ENUMERATE = "        for i, (x, y) in enumerate(loader):"
FROM_ONE = "        for i, (x, y) in enumerate(loader, 1):"
RESET_PER_EPOCH = "        i = 0\n        for x, y in loader:"
RESET_PER_BATCH = "        for x, y in loader:\n            i = 0"


@pytest.mark.parametrize(
    ("loop", "test", "after", "codes"),
    [
        (ENUMERATE, "i == 0", "", []),  # once per epoch, before the epoch's first backward
        (ENUMERATE, "not i", "", []),
        (ENUMERATE, "i < 1", "", []),
        (FROM_ONE, "i == 1", "", []),
        (RESET_PER_EPOCH, "i == 0", "            i += 1", []),
        (ENUMERATE, "i == 1", "", ["GL002"]),  # the second micro-batch of an epoch: inside a window
        (FROM_ONE, "i == 0", "", []),  # never true: never clears (the step's own clear remains)
        (RESET_PER_BATCH, "i == 0", "            i += 1", ["GL002"]),  # reset on every micro-batch: clears each one
        (RESET_PER_EPOCH, "i == 0", "            i = i * 2", ["GL002"]),  # not an increment: unknown again
    ],
)
def test_a_clear_at_a_counter_reset_value(loop: str, test: str, after: str, codes: list[str]) -> None:
    src = EPOCHS.format(loop=loop, test=test, after=after)
    assert [d.code for d in check_source(src)] == codes


def test_a_callee_counter_of_the_same_name_is_its_own() -> None:
    src = """\
import torch
from torch import nn


def clear_if_first(optimizer, i):
    if i == 0:
        optimizer.zero_grad()


def train(model, loader, accum, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for i, (x, y) in enumerate(loader):
            clear_if_first(optimizer, epoch)
            loss = nn.functional.mse_loss(model(x), y) / accum
            loss.backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
"""
    # `i` in the helper is the epoch, not the caller's micro-batch counter: clears on any micro-batch of epoch 0
    assert [d.code for d in check_source(src)] == ["GL002"]


def test_truth_at_and_past_the_reset_value() -> None:
    k = periods.key(0, "i")
    at = periods.reset(PathState(), k, 0)
    past = periods.advance(at, k)
    test = ast.parse("i == 0", mode="eval").body
    assert periods.truth(at, test, 0, frozenset({"i"})) is True
    assert periods.truth(past, test, 0, frozenset({"i"})) is False
    assert periods.truth(past, ast.parse("i > 3", mode="eval").body, 0, frozenset({"i"})) is None  # 1..8 disagree
    assert periods.truth(periods.forget(past, k), test, 0, frozenset({"i"})) is None
    assert periods.truth(at, ast.parse("i == n", mode="eval").body, 0, frozenset({"i"})) is None  # reads another name


TRAINER = """\
import torch
from torch import nn


class Trainer:
    def __init__(self, model, loader, accum):
        self.model = model
        self.loader = loader
        self.accum = accum
        self.epoch_iteration = 0
        self.global_step = 0
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def run(self, epochs):
        for _ in range(epochs):
{reset}
            for batch in self.loader:
                self.train_step(batch)
                self.epoch_iteration += 1

    def train_step(self, batch):
        x, y = batch
        if self.epoch_iteration == 0:
            self.optimizer.zero_grad()
        loss = nn.functional.mse_loss(self.model(x), y) / self.accum
        loss.backward()
        self.global_step += 1
        if self.global_step % self.accum == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()
"""


def test_an_attribute_counter_reset_per_epoch_in_the_loop_method_gates_the_step_method() -> None:
    assert [d.code for d in check_source(TRAINER.format(reset="            self.epoch_iteration = 0"))] == []
    # reset on a counter that is not the one tested: the clear's timing is unknown again
    assert [d.code for d in check_source(TRAINER.format(reset="            self.epoch_iteration = len(self.loader)"))] == ["GL002"]
