"""A step function whose step is written in a loop over its optimizers (`for opt in self.optimizers: ...
scaler.step(opt)`) steps once per call, as one with the step in its own body does: run once per batch, what one
call leaves (an `unscale_` whose step a `continue` skipped) meets the next call (DL-Art-School's `do_step`,
lockbox 7: the second `unscale_` before `update()` raises)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

TRAINER = """\
import torch
from torch.cuda.amp import GradScaler


class Trainer:
    def __init__(self, net):
        self.net = net
        self.scaler = GradScaler()
        self.opt = torch.optim.Adam(net.parameters())
        self.optimizers = [self.opt]

    def do_step(self, it):
        for opt in self.optimizers:
{skip}
        {after}

    def optimize_parameters(self, x, it):
        self.opt.zero_grad()
        self.scaler.scale(self.net(x).mean()).backward()
        self.scaler.unscale_(self.opt)
        self.do_step(it)
"""

CONTINUE = """\
            if self.skipped(it):
                continue
            self.scaler.step(opt)
            self.scaler.update()"""

NOT = """\
            if not self.skipped(it):
                self.scaler.step(opt)
                self.scaler.update()"""

# the scaler forgets the `unscale_` at each `update()`, run whether or not the step was skipped
UPDATED = """\
            if not self.skipped(it):
                self.scaler.step(opt)"""

UNSCALE = "        self.scaler.unscale_(self.opt)\n"


def _gl007(skip: str, after: str = "pass") -> list[int]:
    text = TRAINER.format(skip=skip, after=after)
    return [d.span.line for d in check_source(text, "trainer.py") if d.code == "GL007"]


@pytest.mark.parametrize("skip", [CONTINUE, NOT], ids=["continue", "if-not"])
def test_an_unscale_after_a_step_skipped_in_a_loop_over_optimizers_is_a_second_one(skip: str) -> None:
    line = TRAINER.format(skip=skip, after="pass").splitlines().index(UNSCALE.rstrip("\n")) + 1
    assert _gl007(skip) == [line]


def test_an_update_whether_or_not_the_step_ran_is_silent() -> None:
    assert _gl007(UPDATED, after="self.scaler.update()") == []
