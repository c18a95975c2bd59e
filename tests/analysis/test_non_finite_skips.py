"""A step skipped only when the gradient norm is not finite drops a broken window: no accumulation window for
GL003 (an undivided loss) nor GL007 (a clip on a partial sum) (`TrainingModel.skipped_only_if_not_finite`)."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

HELPER = """\
    import math

    import torch


    class Solver:
        def __init__(self, model, optimizer, clip):
            self.model = model
            self.optimizer = optimizer
            self.GRAD_CLIP = clip

        def backward(self, loss):
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.GRAD_CLIP)
            if SKIP:
                print("skipped")
            else:
                self.optimizer.step()
            return grad_norm
"""


def _codes(skip: str) -> set[str]:
    found = check_source(textwrap.dedent(HELPER.replace("SKIP", skip)), "solver.py", settings=Settings.default())
    return {d.code for d in found}


@pytest.mark.parametrize("skip", ["math.isnan(grad_norm)", "not math.isfinite(grad_norm)", "torch.isinf(grad_norm)"])
def test_a_step_skipped_on_a_broken_norm_is_no_window(skip: str) -> None:
    # the helper read alone (called once per batch, its caller out of sight): the clear may be the caller's
    # (a possible GL001 stays), but the skipped step opens no accumulation window
    assert not {"GL003", "GL007"} & _codes(skip)


@pytest.mark.parametrize("skip", ["self.accumulating()", "grad_norm > 1e4"])
def test_a_step_skipped_on_another_test_still_opens_a_window(skip: str) -> None:
    # the twin: a step skipped on any other test (a window still filling, a spike) leaves the gradients to the
    # next backward
    assert {"GL003", "GL007"} <= _codes(skip)


def test_a_micro_batch_loop_inside_the_step_loop_is_still_a_window() -> None:
    # the twin of the other side: the step is skipped on a non-finite norm, but the backward and the clip run in a
    # micro-batch loop inside the step's loop: that loop is the window (minFM's shape), clipped on every micro-batch
    src = """\
import math
import torch
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step, batch in enumerate(torch.randn(10, 4, 2, 4)):
    for x in batch:
        model(x).mean().backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if math.isfinite(grad_norm):
        optimizer.step()
    optimizer.zero_grad()
"""
    assert sorted(d.code for d in check_source(src, "train.py", settings=Settings.default())) == ["GL003", "GL007"]


SKIPPED_THEN_CLEARED = """\
import math

import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [torch.randn(3, 4), torch.randn(0, 4)] * 4


def observe(batch):
    CLEAR_FIRST
    loss = model(batch).pow(2).mean()
    if batch.shape[0] > 0:
        loss.backward()
    CLEAR_AFTER
    if STEP_TEST:
        optimizer.step()


for batch in loader:
    observe(batch)
"""


def _skipped(clear_first: bool, step_test: str) -> str:
    return (SKIPPED_THEN_CLEARED.replace("STEP_TEST", step_test)
            .replace("CLEAR_FIRST", "optimizer.zero_grad()" if clear_first else "pass")
            .replace("CLEAR_AFTER", "pass" if clear_first else "optimizer.zero_grad()"))


@pytest.mark.parametrize("step_test", ["not math.isnan(loss.item())", "torch.isfinite(loss)"])
def test_a_clear_before_the_backward_drops_what_a_non_finite_skip_left(step_test: str) -> None:
    """The clear at the top of the call drops the gradients of the call before only when that call skipped its
    step, and it skips it only on a non-finite loss: dropped on purpose (a call that does not backpropagate,
    here an empty batch, then steps on nothing, as a GradScaler's skipped step leaves it)."""
    assert [d.code for d in check_source(_skipped(True, step_test))] == []


@pytest.mark.parametrize("step_test", ["loss.item() > 0.1", "batch.shape[0] > 1"])
def test_a_step_skipped_for_another_reason_still_leaves_gradients_the_clear_drops(step_test: str) -> None:
    found = [(d.code, d.line) for d in check_source(_skipped(True, step_test))]
    assert found == [("GL002", 11)]


def test_a_clear_between_the_backward_and_a_finite_step_is_still_a_bug() -> None:
    """`backward(); zero_grad(); if isfinite: step()`: the clear drops this call's gradients, which the step
    would apply: the finiteness test says nothing of them."""
    found = [(d.code, d.line) for d in check_source(_skipped(False, "not math.isnan(loss.item())"))]
    assert found == [("GL002", 15)]
