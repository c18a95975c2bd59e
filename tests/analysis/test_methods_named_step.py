"""A trainer's own method named `step` is not an optimizer's `.step()`.

Two readings took a call by its method name alone: a loop `for _ in range(n): trainer.step()` was read as
an optimizer benchmark stepping without backward (`trials`), so the optimizer stepped inside
`Trainer.step` applied nothing and a missing clear went unseen; and in `Trainer.step`,
`for optimizer in self.optimizers: optimizer.step()` was not read as a loop over members, because `step`
names a method of the file that trains, so a second pass took the same member's step for another
(undreamt's certain GL001 on a correct loop, lockbox 11; found after its opening: it does not count there)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


ONE = """\
import torch
from torch import nn


def main(steps):
    enc = nn.Linear(4, 4)
    optimizer = torch.optim.Adam(enc.parameters(), lr=1e-3)
    trainer = Trainer(optimizer, enc)
    for _ in range(steps):
        trainer.step()


class Trainer:
    def __init__(self, optimizer, model):
        self.optimizer = optimizer
        self.model = model

    def step(self):
        CLEAR
        loss = self.model(torch.randn(2, 4)).sum()
        loss.backward()
        self.optimizer.step()


main(3)
"""

MEMBERS = """\
import time


class Trainer:
    def __init__(self, corpus, optimizers, translator, batch_size=50):
        self.corpus = corpus
        self.translator = translator
        self.optimizers = optimizers
        self.batch_size = batch_size

    def step(self):
        CLEAR
        t = time.time()
        src, trg = self.corpus.next_batch(self.batch_size)
        loss = self.translator.score(src, trg, train=True)
        loss.div(self.batch_size).backward()
        for optimizer in self.optimizers:
            optimizer.step()
        self.backward_time = time.time() - t
"""


def test_a_trainer_step_called_in_a_loop_is_not_an_optimizer_benchmark() -> None:
    assert found(ONE.replace("        CLEAR\n", "")) == [("GL001", 21, "certain")]
    assert found(ONE.replace("CLEAR", "self.optimizer.zero_grad()")) == []


def test_a_loop_over_optimizers_in_a_method_named_step_steps_each_member_once() -> None:
    assert found(MEMBERS.replace("CLEAR", "for optimizer in self.optimizers:\n            optimizer.zero_grad()")) == []
    # the clear's loop under another name was read right before too
    assert found(MEMBERS.replace("CLEAR", "for o in self.optimizers:\n            o.zero_grad()")) == []


def test_a_method_named_step_that_trains_still_stops_a_members_loop() -> None:
    # `for t in self.trainers: t.step()` runs the file's `Trainer.step` on each: not one step per member
    text = MEMBERS.replace("CLEAR", "for optimizer in self.optimizers:\n            optimizer.zero_grad()") + """

class Loop:
    def __init__(self, trainers):
        self.trainers = trainers

    def run(self, n):
        for _ in range(n):
            for t in self.trainers:
                t.step()
"""
    assert found(text) == []
