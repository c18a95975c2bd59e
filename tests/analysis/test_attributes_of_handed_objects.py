"""Attributes of an object handed to a function or method the analysis inlines (`self._hook_on_batch_forward(ctx)`):
the object is the caller's, so what the caller stored on it is there in the callee, and what the callee stores on it
(`ctx.loss_task = ...`) is there in the caller after the call. Only `self.*` and globals went back to the caller, so
a FederatedScope-like trainer whose hooks, called directly one after the other, divide the loss by the window once
each lost the first division: the double division went unreported, and its correct twin (one division, in the
forward hook) was reported as not divided at all."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


TRAINER = """\
import torch
from torch import nn


class Ctx:
    pass


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.criterion = nn.MSELoss()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def _hook_on_batch_forward(self, ctx):
        x, y = ctx.batch
        ctx.loss_task = self.criterion(self.model(x), y) / ctx.grad_accum

    def _hook_on_batch_backward(self, ctx):
AGAIN
        ctx.loss_task.backward(RETAIN)
        if (ctx.cur_batch_i + 1) % ctx.grad_accum == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()

    def run(self, ctx):
        for i, batch in enumerate(ctx.data):
            ctx.batch = batch
            ctx.cur_batch_i = i
            CALLS


ctx = Ctx()
ctx.grad_accum = 4
ctx.data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(8)]
Trainer().run(ctx)
"""

TWICE = "        ctx.loss_task = ctx.loss_task / ctx.grad_accum"
ONCE = "        pass"
CALLS = {
    "positional": "self._hook_on_batch_forward(ctx)\n            self._hook_on_batch_backward(ctx)",
    "keyword": "self._hook_on_batch_forward(ctx=ctx)\n            self._hook_on_batch_backward(ctx=ctx)",
}


def program(again: str, calls: str, retain: str = "") -> str:
    return TRAINER.replace("AGAIN", again).replace("RETAIN", retain).replace("CALLS", CALLS[calls])


def backward_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if "ctx.loss_task.backward(" in line)


@pytest.mark.parametrize("calls", sorted(CALLS))
@pytest.mark.parametrize("retain", ["", "retain_graph=True"])
def test_divided_in_each_hook_is_divided_twice(calls: str, retain: str) -> None:
    text = program(TWICE, calls, retain)
    assert ("GL003", backward_line(text)) in {f[:2] for f in found(text)}


@pytest.mark.parametrize("calls", sorted(CALLS))
@pytest.mark.parametrize("retain", ["", "retain_graph=True"])
def test_divided_in_the_forward_hook_only_is_right(calls: str, retain: str) -> None:
    assert not [f for f in found(program(ONCE, calls, retain)) if f[0] in ("GL003", "GL010")]


def test_what_the_caller_stored_reaches_the_callee() -> None:
    # the window is stored on the object by the caller, read by the callee: divided once, by the window
    text = """\
import torch
from torch import nn


class Ctx:
    pass


def backward_step(ctx, model, optimizer, i, x, y):
    loss = nn.functional.mse_loss(model(x), y) / ctx.accum
    loss.backward()
    if (i + 1) % ctx.accum == 0:
        optimizer.step()
        optimizer.zero_grad()


def train(loader):
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ctx = Ctx()
    ctx.accum = 4
    for i, (x, y) in enumerate(loader):
        backward_step(ctx, model, optimizer, i, x, y)
"""
    assert not [f for f in found(text) if f[0] in ("GL003", "GL010")]


def test_a_parameter_rebound_in_the_callee_stores_nothing_on_the_caller_object() -> None:
    text = program(TWICE, "positional").replace(
        "        x, y = ctx.batch\n",
        "        x, y = ctx.batch\n        ctx = Ctx()\n",
    )
    # the forward hook stores its loss on another object: nothing says the caller's `ctx.loss_task` was divided
    # before the backward hook divides it, so no double division
    assert not [f for f in found(text) if f[0] == "GL003"]


REBOUND = """\
import torch
from torch import nn


def train(args, model, loader):
    optimizer = torch.optim.AdamW(model.parameters())
    if args.local_rank != -1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])
    for step, batch in enumerate(loader):
        loss = model(batch).mean() / args.accum
        loss.backward()
        if (step + 1) % args.accum == 0:
            optimizer.step()
            model.zero_grad()


def main(args, loader):
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
    model.extra = nn.Linear(4, 4)
    args.n_gpu = 1
    train(args, model, loader)
"""


def test_a_parameter_the_callee_rebinds_takes_none_of_the_callers_attributes() -> None:
    """BERT-of-Theseus: `model = DistributedDataParallel(model)` in `train(args, model, ...)`: the caller's `model.*`
    entries are the bare model's, not the wrapper's (taken in, its two true GL006 findings were lost)."""
    assert [(c, line) for c, line, _ in found(REBOUND) if c == "GL006"] == [("GL006", 11)]
