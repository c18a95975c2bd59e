"""A prepared optimizer stepped under the code's own window gate of the Accelerator's window size: each iteration
counts one micro-batch for the code's counter and for Accelerate's, so the framework's window ends where the code's
does, and a clear under the same gate follows a step (the HF Trainer's loop, vendored in many projects:
`if total_batched_samples % args.gradient_accumulation_steps == 0 or ...:` around the step and `model.zero_grad()`,
outside `accelerator.accumulate`)."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint.api import check_source

TRAINER = """
import torch
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, args):
        self.args = args
        self.accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
        optimizer = torch.optim.AdamW(model.parameters())
        self.model, self.optimizer = self.accelerator.prepare(model, optimizer)

    def training_step(self, model, inputs):
        loss = model(**inputs).loss
        self.accelerator.backward(loss)
        return loss.detach()

    def train(self, loader, steps_in_epoch):
        args = self.args
        model = self.model
        total_batched_samples = 0
        for epoch in range(3):
            for step, inputs in enumerate(loader):
                total_batched_samples += 1
                with self.accelerator.accumulate(model):
                    self.training_step(model, inputs)
                if {gate}:
                    self.optimizer.step()
                    model.zero_grad()
"""


def codes(gate: str) -> list[str]:
    return [d.code for d in check_source(textwrap.dedent(TRAINER).replace("{gate}", gate))]


@pytest.mark.parametrize("gate", [
    "total_batched_samples % args.gradient_accumulation_steps == 0",
    "total_batched_samples % self.args.gradient_accumulation_steps == 0 or "
    "(steps_in_epoch <= args.gradient_accumulation_steps and (step + 1) == steps_in_epoch)",
])
def test_a_clear_under_the_code_gate_of_the_framework_window_follows_its_step(gate: str) -> None:
    assert "GL002" not in codes(gate)


@pytest.mark.parametrize("gate", [
    "total_batched_samples % 2 == 0",  # another window: Accelerate's may not end there
    "total_batched_samples % args.gradient_accumulation_steps != 0",  # most micro-batches
])
def test_a_clear_under_another_gate_may_discard_what_the_framework_still_accumulates(gate: str) -> None:
    assert "GL002" in codes(gate)
