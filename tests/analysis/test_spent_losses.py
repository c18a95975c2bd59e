"""A loss a backward pass freed is spent: a later backward of the same name runs on a loss made anew, and what
the spent one was divided by does not carry over to it (FederatedScope's hook divides `ctx.loss_task` in place
once per batch; another hook rebuilds it each batch). A loss divided twice before one backward is still GL003."""

from __future__ import annotations

import textwrap

from gradcheck_lint.api import check_source

TRAINER = """
import torch


class BaseTrainer:
    def _hook_on_batch_forward(self, ctx):
        x, y = ctx.data_batch
        ctx.loss_task = ctx.criterion(ctx.model(x), y)

    def run(self, ctx):
        for batch in ctx.loader:
            ctx.data_batch = batch
            self._hook_on_batch_forward(ctx)
            self._hook_on_batch_backward(ctx)


class Trainer(BaseTrainer):
    def _hook_on_batch_backward(self, ctx):
        ctx.accum_steps += 1
{divide}
        ctx.loss_task.backward({retain})
        if ctx.accum_steps == ctx.grad_accum_count:
            ctx.optimizer.step()
            ctx.optimizer.zero_grad()
            ctx.accum_steps = 0
"""

ONCE = "        ctx.loss_task /= ctx.grad_accum_count"


def codes(divide: str, retain: str = "") -> list[str]:
    return [d.code for d in check_source(textwrap.dedent(TRAINER.format(divide=divide, retain=retain)))]


def test_a_loss_divided_in_place_once_per_call_is_divided_once() -> None:
    assert codes(ONCE) == []


def test_a_loss_divided_twice_before_its_backward_is_still_reported() -> None:
    assert codes(ONCE + "\n" + ONCE) == ["GL003"]


def test_a_loss_whose_graph_is_retained_is_not_spent() -> None:
    """`backward(retain_graph=True)`: the same loss may be backpropagated again, divisors and all."""
    assert codes(ONCE, retain="retain_graph=True") == ["GL003"]
