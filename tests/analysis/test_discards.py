"""GL002 and deliberate drops: a window whose gradient norm (or loss) is not finite is cleared and
skipped on purpose (diffusers' sana-sprint example, a false alarm on unseen code); the same clear
under any other test still drops micro-batches a step should have applied."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def codes(text: str) -> set[tuple[int, str]]:
    return {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics}


LOOP = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
N = 4
for i, x in enumerate(torch.randn(16, 2, 4)):
    (model(x).mean() / N).backward()
    if (i + 1) % N == 0:
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if {test}:
            optimizer.zero_grad(set_to_none=True)
            continue
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize("test", ["torch.logical_or(grad_norm.isnan(), grad_norm.isinf())",
                                  "not torch.isfinite(grad_norm)", "math.isnan(grad_norm.item())"])
def test_a_non_finite_window_cleared_and_skipped_is_deliberate(test: str) -> None:
    assert not any(code == "GL002" for _line, code in codes(LOOP.format(test=test)))


def test_a_window_cleared_and_skipped_on_another_test_is_still_dropped() -> None:
    # with the test inside the window, not at its end, the clear drops earlier micro-batches
    text = LOOP.format(test="i % 3 == 0").replace("    if (i + 1) % N == 0:\n        grad_norm", "    if True:\n        grad_norm")
    text = text.replace("        optimizer.step()", "        if (i + 1) % N == 0:\n            optimizer.step()")
    assert (11, "GL002") in codes(text)


FP16_OPTIMIZER = """\
import math
import torch


class Fp16Optimizer:
    def __init__(self, model, grad_clip=float("inf"), loss_scale=1024):
        self.model = model
        self.loss_scale = loss_scale
        self.grad_clip = grad_clip

    def step(self, loss, optimizer, update=True):
        loss *= self.loss_scale
        loss.backward()
        if update:
            for p in self.model.parameters():
                p.grad.data /= self.loss_scale
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
            if math.isfinite(norm):
                optimizer.step()
            else:
                self.loss_scale /= 2
            self.model.zero_grad()
"""


def test_a_clear_after_a_step_taken_only_on_finite_gradients_is_deliberate() -> None:
    """NVIDIA GNMT's fp16 optimizer (a false alarm on unseen code): the step runs when the norm is finite;
    otherwise the loss scale shrinks, and the clear right after drops the overflowed window on purpose."""
    assert codes(FP16_OPTIMIZER) == set()


def test_a_clear_after_a_finite_test_in_another_block_still_drops_micro_batches() -> None:
    """The same finiteness test around the step does not excuse a clear that runs on every micro-batch,
    outside the block of the window's step."""
    src = """\
import math
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(8, 4).split(2)):
    (model(x).sum() / 4).backward()
    if (i + 1) % 4 == 0:
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if math.isfinite(norm):
            opt.step()
    opt.zero_grad()
"""
    assert codes(src) == {(11, "GL002")}


BACKUP = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
params = list(model.parameters())
saved = [torch.zeros_like(p) for p in params]
for x in torch.randn(8, 2, 4):
    optimizer.zero_grad()
    model(x).pow(2).mean().backward()
    for i, p in enumerate(params):
        saved[i].copy_(p.grad)
        p.grad.zero_()
    probe = model(x).mean()  # another computation's gradient, read and dropped
    probe.backward()
    for p in params:
        p.grad.zero_()
{restore}
    optimizer.step()
"""


@pytest.mark.parametrize(("restore", "expected"), [
    # gradients saved to buffers, cleared to make room for another computation, and written back
    ("    for i, p in enumerate(params):\n        p.grad.copy_(saved[i])", set()),
    ("    for i, p in enumerate(params):\n        p.grad.add_(saved[i])", set()),
    ("", {(16, "GL002")}),  # ... never written back: the step sees nothing of the loss
])
def test_gradients_backed_up_and_written_back_around_a_clear(restore: str, expected: set[tuple[int, str]]) -> None:
    """mammoth's second-order learner copies the window's gradients to buffers, clears, and copies them
    back before the step (`p.grad.copy_(buffer[i])`): the clear discards nothing the step misses."""
    assert {c for c in codes(BACKUP.format(restore=restore)) if c[1] == "GL002"} == expected


FREEZE = """\
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, freeze_last_layer=2):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.last_layer = nn.Linear(4, 2)
        self.freeze_last_layer = freeze_last_layer

    def forward(self, x):
        return self.last_layer(self.body(x))

    def cancel_gradients(self, current_epoch):
        if current_epoch >= self.freeze_last_layer:
            return
        for param in self.{part}.parameters():
            param.grad = None


head = Head()
optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
for epoch in range(5):
    loss = head(torch.randn(3, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    head.cancel_gradients(current_epoch=epoch)
    optimizer.step()
"""


@pytest.mark.parametrize(("part", "certainty"), [("last_layer", "possible"), ("body", "possible")])
def test_a_clear_of_part_of_the_model_before_the_step_may_be_a_freeze(part: str, certainty: str) -> None:
    """Dropping one layer's gradients right before the step, with no window, keeps that layer still
    (DINO freezes its last layer in the first epochs so): a bug or a freeze, as the author meant it."""
    text = FREEZE.format(part=part)
    found = [d for d in analyse_text(text, "train.py").diagnostics if d.code == "GL002"]
    assert [(d.span.line, d.certainty.value) for d in found] == [(19, certainty)]
