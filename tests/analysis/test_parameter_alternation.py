"""A step skipped by a test of its function's own parameter (`if update:`), in a function taken as called
once per batch: that one call steps and the next does not is the callers' doing. With no caller in sight it
is assumed, and a clear at the function's top that would drop an unstepped call's gradients is `possible`
(nodegam's `train_on_batch(..., update=False)` is an out-of-memory probe whose gradients are thrown away on
purpose: a certain GL002 false alarm on lockbox 13). A caller in sight that alternates keeps it certain."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

TRAINER = """\
import torch


class Trainer:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.Adam(model.parameters())

    def train_on_batch(self, x, y, update=True):
        for group in self.opt.param_groups:
            for p in group["params"]:
                p.grad = None
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        if update:
            self.opt.step()
        return loss.item()
"""

CALLER = """

def fit(model, loader, accum):
    trainer = Trainer(model)
    for i, (x, y) in enumerate(loader):
        trainer.train_on_batch(x, y, update=(i + 1) % accum == 0)
"""


def gl002(text: str) -> list[str]:
    return [d.certainty for d in analyse_text(text, "train.py").diagnostics if d.code == "GL002"]


def test_alternation_of_an_unread_caller_is_assumed() -> None:
    assert gl002(TRAINER) == ["possible"]


def test_a_caller_in_sight_that_alternates_keeps_it_certain() -> None:
    assert gl002(TRAINER + CALLER) == ["certain"]
