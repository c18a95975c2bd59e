"""A list handed to a function and grown there is the caller's list (`handed_containers`).

undreamt (lockbox 11) builds every optimizer in a helper that appends it to the lists it is handed
(`add_optimizer(enc, (src2src, src2trg))`); read by value, the caller's lists stayed empty, and the trainer's
loop clearing their members cleared nothing (a certain GL001 on a correct loop). Found after lockbox 11's
opening: it does not count there."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


DISPLAY = """\
import torch
from torch import nn


def main(steps):
    a2a = []
    a2b = []

    def add_optimizer(module, directions=()):
        optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)
        for direction in directions:
            direction.append(optimizer)
        return optimizer

    enc = nn.Linear(4, 4)
    dec = nn.Linear(4, 4)
    add_optimizer(enc, (a2a, a2b))
    add_optimizer(dec, (a2a,))
    t1 = Trainer(a2a, lambda x: dec(enc(x)), CLEARED)
    for _ in range(steps):
        t1.train_step()


class Trainer:
    def __init__(self, optimizers, model, cleared):
        self.optimizers = optimizers
        self.cleared = cleared
        self.model = model

    def train_step(self):
        for optimizer in self.cleared:
            optimizer.zero_grad()
        loss = self.model(torch.randn(2, 4)).sum()
        loss.backward()
        for optimizer in self.optimizers:
            optimizer.step()


main(3)
"""

DIRECT = """\
import torch
from torch import nn


def main(steps):
    opts = []

    def add(module, lst):
        lst.append(torch.optim.Adam(module.parameters(), lr=1e-3))

    enc = nn.Linear(4, 4)
    add(enc, opts)
    for _ in range(steps):
        CLEAR
        enc(torch.randn(2, 4)).sum().backward()
        for opt in opts:
            opt.step()


main(3)
"""


def test_a_list_grown_through_a_display_of_lists_holds_what_was_added() -> None:
    # the members of the list cleared are those stepped: clean; the encoder's list alone misses the decoder's
    assert found(DISPLAY.replace("CLEARED", "a2a")) == []
    assert [f[:2] for f in found(DISPLAY.replace("CLEARED", "a2b"))] == [("GL001", 36)]


def test_a_list_grown_through_a_parameter_is_the_callers() -> None:
    assert found(DIRECT.replace("CLEAR", "for opt in opts:\n            opt.zero_grad()")) == []
    # read as empty, the list stepped nothing and the missing clear went unseen
    assert found(DIRECT.replace("        CLEAR\n", "")) == [("GL001", 16, "certain")]


def test_a_parameter_rebound_in_the_callee_is_not_the_callers_list() -> None:
    rebinds = DIRECT.replace("    def add(module, lst):\n", "    def add(module, lst):\n        lst = []\n")
    assert found(rebinds.replace("        CLEAR\n", "")) == []
