"""An attribute stepped like an optimizer, of an object built from an optimizer, is taken for that optimizer: a
guess when it is only stepped (the object may hold a learning-rate scheduler beside it, archai's `OptimSched`), so
a finding resting on it is `possible`; read when the code also clears it as one (`wrapper.opt.zero_grad()`)."""

from __future__ import annotations

import textwrap

from gradcheck_lint.api import check_source
from gradcheck_lint.diagnostics import Certainty

PAIRS = """
import torch


class Pair:
    def __init__(self, optim, sched):
        self.optim = optim
        self.sched = sched


class Multi:
    def __init__(self):
        self._items = []

    def append(self, item):
        self._items.append(item)

    def step(self):
        for item in self._items:
            item.optim.step()
            if item.sched:
                item.sched.step()


model = torch.nn.Linear(4, 1)
optim = torch.optim.SGD(model.parameters(), lr=0.1)
multi = Multi()
multi.append(Pair(optim, {sched}))
for x in torch.randn(10, 8, 4):
    optim.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    multi.step()
"""


def findings(src: str) -> list[tuple[str, int, Certainty]]:
    return [(d.code, d.line, d.certainty) for d in check_source(textwrap.dedent(src))]


def test_a_scheduler_beside_the_optimizer_is_no_certain_second_step() -> None:
    for sched in ("None", "torch.optim.lr_scheduler.StepLR(optim, 10)"):
        assert all(c is Certainty.POSSIBLE for _, _, c in findings(PAIRS.format(sched=sched))), sched


WRAPPER = """
import torch


class Wrapped:
    def __init__(self, opt):
        self.opt = opt


model = torch.nn.Linear(4, 1)
holder = [Wrapped(torch.optim.SGD(model.parameters(), lr=0.1))]
for x in torch.randn(10, 8, 4):
    for w in holder:
{clear}
        loss = model(x).pow(2).mean()
        loss.backward()
        w.opt.step()
"""


def test_an_attribute_stepped_and_cleared_is_the_optimizer_it_wraps() -> None:
    """Used as an optimizer in sight (stepped and cleared): the link is read, a missing clear elsewhere certain."""
    assert findings(WRAPPER.format(clear="        w.opt.zero_grad()")) == []
    # the clear moved before the training loop: it runs once, and nothing clears between later steps
    src = WRAPPER.replace("for x in torch.randn(10, 8, 4):\n    for w in holder:\n{clear}\n",
                          "for w in holder:\n    w.opt.zero_grad()\nfor x in torch.randn(10, 8, 4):\n    for w in holder:\n")
    assert findings(src) == [("GL001", 18, Certainty.CERTAIN)]  # at `w.opt.step()`
