"""A test joined by `and`/`or` is one fact whatever the order of its parts: CoFi's fixed trainer unscales the l0
optimizer under `if stage == "jt" or stage == "lw":` and steps it, then updates the scaler, under
`if stage == "lw" or stage == "jt":`. Read as two unrelated tests, a path unscaled without updating, and the
next iteration's `unscale_` was reported as a second one (GL007)."""

import pytest

from support import lines_of

TRAINER = """
import torch


class T:
    def __init__(self, model, l0_module):
        self.model = model
        self.l0_module = l0_module
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.l0_optimizer = torch.optim.SGD(l0_module.parameters(), lr=0.1)
        self.scaler = torch.cuda.amp.GradScaler()

    def train(self, loader):
        for x, y in loader:
            stage = self.get_stage()
            loss = (self.model(x) - y).pow(2).mean() + self.l0_module(x).sum()
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            if {unscale_test}:
                self.scaler.unscale_(self.l0_optimizer)
            self.scaler.step(self.optimizer)
            if stage != "lw" and stage != "jt":
                self.scaler.update()
            if {step_test}:
                self.scaler.step(self.l0_optimizer)
                self.scaler.update()
            self.optimizer.zero_grad()
            self.l0_optimizer.zero_grad()
"""


def _gl007(unscale_test: str, step_test: str) -> list[int]:
    return lines_of("GL007", TRAINER.format(unscale_test=unscale_test, step_test=step_test))


@pytest.mark.parametrize("step_test", ['stage == "jt" or stage == "lw"', 'stage == "lw" or stage == "jt"'])
def test_an_or_in_either_order_is_one_test(step_test: str) -> None:
    assert _gl007('stage == "jt" or stage == "lw"', step_test) == []


def test_a_different_test_still_leaves_an_unscale_without_update() -> None:
    assert _gl007('stage == "jt" or stage == "lw"', 'stage == "lw" or stage == "ft"') == [20]
