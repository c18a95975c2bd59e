"""A loop that steps or clears each member of a collection (`Counters.visits_members`): one abstract object
stands for every member, so the loop is one pass over its body, not a fixed point that would take the
next member's step for a second step of the first member. The loop variable over a collection made out
of sight stands for that collection's members (`Counters._member`). Twins without the clear, or clearing
another collection, still report."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source


def codes(text: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in check_source(text))


# the collection comes from code out of sight (pydreamer's train.py: `optimizers = model.init_optimizers(...)`,
# one loss per optimizer from `model.training_step`)
UNKNOWN = """\
import torch
from models import WorldModel


def train(conf, data):
    model = WorldModel(conf)
    optimizers = model.init_optimizers(1e-3)
    scaler = torch.cuda.amp.GradScaler()
    for x in data:
        losses = model.training_step(x)
{clear}
        for loss in losses:
            scaler.scale(loss).backward()
        for opt in optimizers:
            scaler.unscale_(opt)
        for opt in optimizers:
            scaler.step(opt)
        scaler.update()
"""

CLEAR_EACH = """\
        for opt in optimizers:
            opt.zero_grad()"""


def test_a_clear_loop_over_the_collection_the_step_loop_walks_clears_each_member() -> None:
    assert codes(UNKNOWN.format(clear=CLEAR_EACH)) == []


def test_without_the_clear_loop_the_step_of_each_member_is_stale() -> None:
    assert codes(UNKNOWN.format(clear="        pass")) == [(17, "GL001")]


# REDQ: nets and optimizers appended in a loop of `__init__` (one construction site for every member)
# and addressed by the counter of a loop over their indices
INDEXED = """\
import torch
from torch import nn


class Agent:
    def __init__(self, num_q=2):
        self.q_nets = []
        self.q_optimizers = []
        for _ in range(num_q):
            net = nn.Linear(6, 1)
            self.q_nets.append(net)
            self.q_optimizers.append(torch.optim.Adam(net.parameters()))
        self.others = [torch.optim.Adam(nn.Linear(6, 1).parameters())]
        self.num_q = num_q

    def train(self, batches):
        for x, y in batches:
            loss = sum(((self.q_nets[i](x) - y) ** 2).mean() for i in range(self.num_q))
            for q_i in range(self.num_q):
                self.{cleared}[q_i].zero_grad()
            loss.backward()
            for q_i in range(self.num_q):
                self.q_optimizers[q_i].step()
"""


def test_members_addressed_by_the_counter_of_a_loop_over_their_indices() -> None:
    assert codes(INDEXED.format(cleared="q_optimizers")) == []
    # clearing the members of another list leaves the Q networks' gradients to accumulate
    assert codes(INDEXED.format(cleared="others")) == [(23, "GL001")]


# a list built in sight: its members are two different optimizers
LITERAL = """\
import torch
from torch import nn


def train(data):
    model, head = nn.Linear(3, 1), nn.Linear(3, 1)
    optimizers = [torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(head.parameters(), lr=0.1)]
    others = [torch.optim.SGD(head.parameters(), lr=0.1)]
    for x in data:
        loss = model(x).sum() + head(x).sum()
        for opt in {cleared}:
            opt.zero_grad()
        loss.backward()
        for i in range(len(optimizers)):
            optimizers[i].step()
"""


@pytest.mark.parametrize(("cleared", "expected"), [("optimizers", []), ("others", [(15, "GL001")])])
def test_a_literal_list_stepped_by_index(cleared: str, expected: list[tuple[int, str]]) -> None:
    assert codes(LITERAL.format(cleared=cleared)) == expected


def test_a_loop_that_calls_a_training_method_stays_a_loop() -> None:
    # the loop variable is handed to a method that trains: its iterations are micro-batches, not members
    src = """\
import torch
from torch import nn


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(self, x):
        self.model(x).sum().backward()
        self.optimizer.step()


trainer = Trainer(nn.Linear(3, 1))
for x in torch.randn(4, 2, 3):
    trainer.train_step(x)
"""
    assert codes(src) == [(12, "GL001")]


# a loop that only backpropagates losses that exist before it (one graph each, all in memory at once) is
# no loop of micro-batches: its losses are the terms of the batch they were computed from
LOSSES = """\
import torch
from torch import nn


def train(data):
    model, head = nn.Linear(3, 1), nn.Linear(3, 1)
    opt = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.1)
    for x in data:
        opt.zero_grad()
{backward}
        opt.step()
"""


def test_backpropagating_the_losses_of_one_batch_in_a_loop_is_no_accumulation() -> None:
    terms = """\
        losses = [model(x).sum(), head(x).sum()]
        for loss in losses:
            loss.backward()"""
    assert codes(LOSSES.format(backward=terms)) == []


def test_a_loop_running_a_forward_pass_per_chunk_still_accumulates_micro_batches() -> None:
    chunks = """\
        for chunk in x.split(2):
            (model(chunk).mean() + head(chunk).mean()).backward()"""
    assert codes(LOSSES.format(backward=chunks)) == [(11, "GL003")]


# synthcity's TimeSeriesGAN (lockbox 11, after its opening: it does not count there), as a statement-deleting
# reducer left its file: each model of a list carries its own optimizer; each is cleared, then clipped and stepped
# after one backward. The clip of a member's parameters is that member's, as its step is: still one pass, not a
# second step of the first member.
CLIPPED_MEMBERS = """\
import torch
from torch import nn

class TimeSeriesGAN(nn.Module):

    def _train_epoch_embedding(self, static_data: torch.Tensor, temporal_data: torch.Tensor, observation_times: torch.Tensor, cond: Optional[torch.Tensor]) -> float:
        for model in train_models:
            model.optimizer.zero_grad()
        errE.backward()
        for model in train_models:
            if self.clipping_value > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), self.clipping_value)
            model.optimizer.step()
"""


def test_a_clip_of_each_members_parameters_before_its_step_keeps_one_pass() -> None:
    assert codes(CLIPPED_MEMBERS) == []
    # without the clear loop, each member's step is still stale
    assert codes(CLIPPED_MEMBERS.replace("model.optimizer.zero_grad()", "pass")) == [(13, "GL001")]


# hackathon_distillation (lockbox 42): the optimizers are handed in; each is cleared in one loop and, in another,
# unscaled, clipped over the parameters gathered from its own groups, and stepped. The clip reads a list the body
# made, not the loop's name: it steps and clears nothing, so the loop is still one pass over every member.
GATHERED = """\
import torch


class ModelWrapper:
    def training_step(self, model, batch, optimizers, lr_schedulers, scaler):
{clear}
        loss = model(batch).mean()
        scaler.scale(loss).backward()
        for optimizer in optimizers:
            scaler.unscale_(optimizer)
            opt_params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
            torch.nn.utils.clip_grad_norm_(opt_params, 1.0, error_if_nonfinite=False)
            scaler.step(optimizer)
        for lr_scheduler in lr_schedulers:
            lr_scheduler.step()
        scaler.update()
"""


def test_a_clip_of_parameters_gathered_from_the_member_keeps_one_pass() -> None:
    clear = "        for optimizer in optimizers:\n            optimizer.zero_grad()"
    assert codes(GATHERED.format(clear=clear)) == []
    # without the clear loop, each member's step is still stale
    assert codes(GATHERED.format(clear="        pass")) == [(13, "GL001")]
