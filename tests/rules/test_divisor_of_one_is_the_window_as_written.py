"""A loss divided by the window's own name where that name is 1 (`loss / self.gradient_accumulate_every` of a trainer
built with the default `gradient_accumulate_every=1`) is divided by the window as written: the loop of that many
micro-batches is the same window, and GL003 must not say the loss is not divided by it (Nerfusion-EG3D's vendored
diffusion trainer, lockbox 41: a certain GL003 whose *safe* fix divided the loss a second time). A divisor of 1 still
divides nothing: GL010 does not say every step is N times too small when N is 1."""

from __future__ import annotations

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, gradient_accumulate_every=1):
        self.model = model
        self.gradient_accumulate_every = gradient_accumulate_every
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        self.dl = iter([torch.randn(2, 4)] * 100)

    def train(self):
        for step in range(10):
            for _ in range({count}):
                loss = self.model(next(self.dl)).mean()
                loss = loss {divide}
                loss.backward()
            self.opt.step()
            self.opt.zero_grad()


Trainer(torch.nn.Linear(4, 1){given}).train()
"""


def _found(count: str = "self.gradient_accumulate_every", divide: str = "/ self.gradient_accumulate_every",
           given: str = "") -> list[tuple[str, int]]:
    source = textwrap.dedent(TRAINER.format(count=count, divide=divide, given=given))
    return [(d.code, d.line) for d in check_source(source, "t.py", settings=Settings.default())]


def test_a_loss_divided_by_the_window_of_its_loop_is_divided_whatever_its_value() -> None:
    assert _found() == []
    assert _found(given=", gradient_accumulate_every=4") == []


def test_a_loss_not_divided_is_still_reported() -> None:
    assert _found(divide="* 1.0", given=", gradient_accumulate_every=4") == [("GL003", 17)]


def test_a_divisor_of_one_on_a_step_of_every_micro_batch_is_no_double_scaling() -> None:
    # one backward per step: dividing by an accumulation count of 1 makes nothing too small
    assert _found(count="1") == []
