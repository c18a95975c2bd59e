"""An optimizer attribute with alternatives (`self.optimizer = optimizer; if self.optimizer is None: self.optimizer =
AdamW(...)`) is one object at run time: a loss the analysis cannot follow (`self.loss_fn(x)`) is backpropagated for it,
as it would be for a single optimizer (`Recorder.one_optimizer`). Two names that may hold different optimizers
(`opt_g`, `opt_d`) are not one."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

TRAINER = """\
import torch


class Trainer:
    def __init__(self, model, loss_fn, optimizer=None, accumulation_steps=1):
        self.model = model
        self.loss_fn = loss_fn
        BUILD
        self.accumulation_steps = accumulation_steps

    def train(self, loader, epochs):
        for epoch in range(epochs):
            for step, x in enumerate(loader):
                self.optimizer.zero_grad()
                loss = self.loss_fn(x) / self.accumulation_steps
                loss.backward()
                if (step + 1) % self.accumulation_steps == 0:
                    self.optimizer.step()
"""
OPTIONAL = """self.optimizer = optimizer
        if self.optimizer is None:
            self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)"""
ONE = "self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)"


def found(build: str) -> list[tuple[str, int, str]]:
    text = TRAINER.replace("BUILD", build)
    return [(d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "trainer.py").diagnostics]


def clear_line(build: str) -> int:
    text = TRAINER.replace("BUILD", build)
    return next(i for i, line in enumerate(text.splitlines(), 1) if "zero_grad()" in line)


def test_the_clear_of_an_optional_optimizer_discards_a_window_of_an_unread_loss() -> None:
    # the clear on every micro-batch drops the window, whichever optimizer the caller chose; that the loss reaches
    # the handed-in one's parameters is assumed (it is made out of sight), so the finding is possible
    assert found(OPTIONAL) == [("GL002", clear_line(OPTIONAL), "possible")]


def test_a_single_optimizer_built_in_sight_is_certain() -> None:
    assert found(ONE) == [("GL002", clear_line(ONE), "certain")]


def test_two_optimizer_names_are_not_one_object() -> None:
    """`self.opt_g` and `self.opt_d` may differ: the unread loss is for either, no write is certain and nothing
    is found on it."""
    text = TRAINER.replace("BUILD", "self.opt_g = torch.optim.AdamW(self.model.parameters())\n"
                                    "        self.opt_d = torch.optim.SGD(self.model.parameters(), lr=0.1)\n"
                                    "        self.optimizer = self.opt_g if optimizer is None else self.opt_d")
    assert [d.code for d in analyse_text(text, "trainer.py").diagnostics if d.code == "GL002"] == []
