"""A loop that steps at the top of an iteration, before the forward and backward of its micro-batch (vq-draw's trainer,
lockbox 31 after its opening):

    for i, batch in enumerate(loader):
        if not i % N:
            if i:                      # (or `i % N == 0 and i > 0`, or nothing: the first step applies nothing)
                optimizer.step()
            optimizer.zero_grad()
        loss(batch).backward()

A window ends at the top of the iteration after its last micro-batch: on a counter from 0, `i % N == 0` steps at N on
the N micro-batches 0..N-1. GL004 said, certain, that the step applies the first micro-batch alone (or a window longer
than N): it read the gate as if the step came after the backward of its iteration, as it does in the usual loop. (A
step in a helper the loop calls is still read the usual way: its place in the loop is not followed.)"""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

LOOP = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
N = 4
for i, batch in enumerate(torch.randn(16, 2, 4)):
    if {gate}:
        {step}
        optimizer.zero_grad()
    loss = model(batch).mean() / N
    loss.backward()
"""
STEP = "optimizer.step()"
# vq-draw's own shape: the step skips the first micro-batch by the counter's truth, the clear runs at every window start
GUARDED_STEP = "if {guard}:\n            optimizer.step()"
BOTTOM = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
N = 4
for i, batch in enumerate(torch.randn(16, 2, 4)):
    loss = model(batch).mean() / N
    loss.backward()
    if i % N == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
HELPER = """\
import torch


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(self, loader, n):
        for i, batch in enumerate(loader):
            {first}
            {second}

    def micro_batch(self, batch, n):
        (self.model(batch).mean() / n).backward()


Trainer(torch.nn.Linear(4, 1)).train(torch.randn(16, 2, 4), 4)
"""
GATE = """if i % n == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()"""


@pytest.mark.parametrize("gate", ["i % N == 0", "i % N == 0 and i > 0", "not i % N"])
def test_a_step_before_the_backward_of_its_iteration_on_a_zero_based_gate_is_right(gate: str) -> None:
    assert [d.code for d in check_source(LOOP.format(gate=gate, step=STEP))] == []


@pytest.mark.parametrize("guard", ["i", "i > 0", "i != 0"])
def test_the_clear_of_the_first_window_start_under_a_step_that_skips_it_discards_nothing(guard: str) -> None:
    # on the first micro-batch (`i` is 0) the clear runs without the step, before any backward: nothing to discard
    # (`if i:` was not followed as a test of the counter's reset value: a certain GL002)
    assert [d.code for d in check_source(LOOP.format(gate="not i % N", step=GUARDED_STEP.format(guard=guard)))] == []


def test_the_step_after_the_backward_still_fires_on_the_first_micro_batch() -> None:
    assert [(d.line, d.code) for d in check_source(BOTTOM)] == [(9, "GL004")]


def test_the_order_is_that_of_the_calls_in_the_loop_not_of_the_helpers_definitions() -> None:
    # the backward runs in a helper defined after the loop: the loop calls it before the gate, the usual order
    assert "GL004" in [d.code for d in check_source(HELPER.format(first="self.micro_batch(batch, n)", second=GATE))]
    # called after the gate: the step at the window's start, right
    assert "GL004" not in [d.code for d in check_source(HELPER.format(first=GATE, second="self.micro_batch(batch, n)"))]
