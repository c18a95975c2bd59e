"""A local of an inlined callee is not its caller's name of the same spelling: `args = self.args` in `evaluate()`,
run from the caller's loop, leaves the caller's tests on its own `args`/`self.args` standing (`expressions.forget`
drops only the tests read in the running function's own code). Before, the callee's binding made the caller forget
them, and the clip after `if self.args.fp16: scaler.unscale_(optimizer)` was read as a clip of scaled gradients
(a vendored simpletransformers' loop, eight copies in lockbox 32: certain GL007)."""

from __future__ import annotations

import pytest

from support import lines_of

MODEL = """\
import torch
from torch import nn


class ClassificationModel:
    def __init__(self, args):
        self.args = args
        self.model = nn.Linear(4, 2)

    def train(self, loader):
        model = self.model
        args = self.args
        optimizer = torch.optim.AdamW(model.parameters())
        if self.args.fp16:
            scaler = torch.cuda.amp.GradScaler()
        for step, batch in enumerate(loader):
            loss = model(batch).mean() / args.gradient_accumulation_steps
            if self.args.fp16:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                if self.args.fp16:
                    scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                if self.args.fp16:
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    optimizer.step()
                model.zero_grad()
            self.eval_model(loader)

    def eval_model(self, loader):
        return self.evaluate(loader)

    def evaluate(self, loader):
        {binding}
        return 0.0
"""
CLIP = 25


@pytest.mark.parametrize("binding", ["args = self.args", "args = 5", "a = self.args"])
def test_a_callee_binding_its_own_local_leaves_the_callers_tests(binding: str) -> None:
    assert lines_of("GL007", MODEL.format(binding=binding)) == []


def test_the_clip_of_scaled_gradients_is_still_reported_without_the_unscale() -> None:
    text = MODEL.format(binding="args = self.args").replace("                    scaler.unscale_(optimizer)\n",
                                                             "                    pass\n")
    assert lines_of("GL007", text) == [CLIP]
