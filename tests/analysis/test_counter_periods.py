"""Periods of counters (`analysis/periods.py`): a test of a counter against the value it was reset to
holds on the first micro-batch of the counter's period only (an epoch for `enumerate`, a task for a
counter reset per task), so a clear under it is not a clear inside an accumulation window."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis import periods
from gradcheck_lint.analysis.gradstate import PathState
from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

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


BASE = """\
    import torch
    from torch import nn


    class ContinualModel(nn.Module):
        def __init__(self, net, args):
            super().__init__()
            self.net = net
            self.args = args
            self.opt = torch.optim.SGD(net.parameters(), lr=0.1)
            self._epoch_iteration = 0

        @property
        def epoch_iteration(self):
            return self._epoch_iteration

        def meta_begin_epoch(self):
            self._epoch_iteration = 0

        def meta_observe(self, x, y):
            out = self.observe(x, y)
            self._epoch_iteration += 1
            return out
"""
LEARNER = """\
from torch import nn

from models.base import ContinualModel


class Learner(ContinualModel):
    def observe(self, x, y):
        loss = nn.functional.mse_loss(self.net(x), y)
{before}        (loss / self.args.virtual_bs_n).backward()
{after}        if self.epoch_iteration > 0 and self.epoch_iteration % self.args.virtual_bs_n == 0:
            self.opt.step()
            self.opt.zero_grad()
        return loss.item()
"""
CLEAR = """\
        if self.epoch_iteration == 0:
            self.opt.zero_grad()
"""


@pytest.mark.parametrize(("before", "after", "expected"), [
    (CLEAR, "", []),  # the first micro-batch of an epoch drops what the last epoch left: no window is cut
    ("", CLEAR, [(11, "GL002")]),  # after this micro-batch's backward: the epoch's first micro-batch is lost
])
def test_a_clear_at_the_start_of_a_base_class_counters_period(tmp_path: Path, before: str, after: str,
                                                              expected: list[tuple[int, str]]) -> None:
    """The counter is kept by a base class in another file and advanced by its caller (mammoth's
    `epoch_iteration`): out of sight, yet `== 0` holds only on the first micro-batch of its period."""
    root = project_tree(tmp_path, {"models/__init__.py": "", "models/base.py": BASE,
                                   "models/learner.py": LEARNER.format(before=before, after=after)})
    found = lint_files([str(p) for p in sorted(root.rglob("*.py"))], Settings.default())
    # (a notice that paths were left out at the cap may stand beside them: GL099, not a finding of a rule)
    assert sorted((d.line, d.code) for d in found if d.path.endswith("learner.py") and d.code != "GL099") == expected


OWN_RESET = """\
import torch
from torch import nn


class Learner:
    def __init__(self, net, accum):
        self.net = net
        self.accum = accum
        self.opt = torch.optim.SGD(net.parameters(), lr=0.1)
        self.old_epoch, self.iteration = 0, 0

    def observe(self, x, y, epoch):
        if self.old_epoch != epoch:
            self.old_epoch = epoch
            self.iteration = 0
        loss = nn.functional.mse_loss(self.net(x), y)
        if self.iteration == 0:
            self.opt.zero_grad()
        (loss / self.accum).backward()
        if (self.iteration + 1) % self.accum == 0:
            self.opt.step()
            self.opt.zero_grad()
        self.iteration += 1
        return loss.item()


learner = Learner(nn.Linear(4, 1), accum=2)
for epoch in range(2):
    for _ in range(5):
        learner.observe(torch.randn(8, 4), torch.randn(8, 1), epoch)
"""


def test_a_clear_after_the_step_method_restarts_its_own_counter_cuts_no_window() -> None:
    """`observe` restarts `self.iteration` when the epoch changes (mammoth's second-order learner): the
    clear under `== 0` drops what the last epoch left, not micro-batches of the starting window."""
    assert [d for d in check_source(OWN_RESET) if d.code == "GL002"] == []


def test_a_counter_restarted_inside_the_step_method_gives_no_off_by_one() -> None:
    """`self.iteration += 1` at the end of the step method marks the counter incremented in that iteration;
    the next call (the caller's next iteration) starts with no increment, also for a counter the instance
    keeps, so `(self.iteration + 1) % accum == 0` still counts micro-batches from one."""
    assert [d.code for d in check_source(OWN_RESET)] == []
