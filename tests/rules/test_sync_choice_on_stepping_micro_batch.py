"""GL006 the wrong way round, read statically: a sync-off context chosen by a test that holds on the micro-batch that steps."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

LOOP = """\
    import contextlib
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP


    def train(net, loader, accum):
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i, (x, y) in enumerate(loader):
            last = (i + 1) % accum == 0
            ctx = CHOICE
            with ctx:
                loss = (model(x) - y).pow(2).mean() / accum
                loss.backward()
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
"""


def _found(source: str) -> list[tuple[str, int, str]]:
    found = check_source(textwrap.dedent(source), "train.py", settings=Settings.default())
    return [(d.code, d.line, d.certainty.value) for d in found]


WRONG = [
    "model.no_sync() if (i + 1) % accum == 0 else contextlib.nullcontext()",  # inverted: off exactly on the stepping one
    "model.no_sync() if i % accum != 0 else contextlib.nullcontext()",  # FunASR's: off by one, the stepping one is off
    "model.no_sync() if last else contextlib.nullcontext()",  # through a name the test was assigned to
    "contextlib.nullcontext() if not last else model.no_sync()",
]
RIGHT = [
    "contextlib.nullcontext() if (i + 1) % accum == 0 else model.no_sync()",
    "model.no_sync() if (i + 1) % accum != 0 else contextlib.nullcontext()",
    "model.no_sync() if not last else contextlib.nullcontext()",
    "contextlib.nullcontext() if last else model.no_sync()",
]


RESET = """\
    import contextlib
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP


    def train(net, loader, accum):
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        counter = 0
        for x in loader:
            counter = counter + 1
            disabled = FLAG
            ctx = CHOICE
            with ctx:
                loss = model(x).mean() / accum
                loss.backward()
            if counter >= accum:
                opt.step()
                opt.zero_grad()
                counter = 0
"""

# NMTGMinor's inverted switch (lockbox 18): a flag written as a conditional expression of two truth values, or
# as the gate's comparison negated, over a counter reset at each step
RESET_WRONG = [
    ("False if counter >= accum else True", "model.no_sync() if not disabled else contextlib.ExitStack()"),
    ("counter < accum", "model.no_sync() if not disabled else contextlib.ExitStack()"),
    ("not counter >= accum", "model.no_sync() if not disabled else contextlib.ExitStack()"),
    ("False if counter >= accum else True", "contextlib.ExitStack() if disabled else model.no_sync()"),
]
RESET_RIGHT = [
    ("False if counter >= accum else True", "model.no_sync() if disabled else contextlib.ExitStack()"),
    ("True if counter < accum else False", "model.no_sync() if disabled else contextlib.ExitStack()"),
    ("counter < accum", "contextlib.ExitStack() if not disabled else model.no_sync()"),
]


@pytest.mark.parametrize(("flag", "choice"), RESET_WRONG)
def test_inverted_switch_through_a_negated_flag_is_reported(flag: str, choice: str) -> None:
    source = RESET.replace("FLAG", flag).replace("CHOICE", choice)
    found = check_source(textwrap.dedent(source), "train.py", settings=Settings.default())
    assert [(d.code, d.line) for d in found] == [("GL006", 13)]
    assert "`model.no_sync()` switches" in found[0].message  # the arm that switches sync off, whatever the test


@pytest.mark.parametrize(("flag", "choice"), RESET_RIGHT)
def test_switch_off_on_the_other_micro_batches_through_a_flag_is_silent(flag: str, choice: str) -> None:
    assert _found(RESET.replace("FLAG", flag).replace("CHOICE", choice)) == []


@pytest.mark.parametrize("choice", WRONG)
def test_sync_off_on_the_stepping_micro_batch_is_reported_at_the_choice(choice: str) -> None:
    assert _found(LOOP.replace("CHOICE", choice)) == [("GL006", 11, "certain")]


@pytest.mark.parametrize("choice", RIGHT)
def test_sync_off_on_the_other_micro_batches_is_silent(choice: str) -> None:
    assert _found(LOOP.replace("CHOICE", choice)) == []


METHODS = """\
    from contextlib import nullcontext
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP


    class Trainer:
        def __init__(self, net, accum):
            self.model = DDP(net)
            self.optim = torch.optim.SGD(self.model.parameters(), lr=0.1)
            self.accum = accum

        def update_step(self, batch_idx):
            if (batch_idx + 1) % self.accum == 0:
                self.optim.step()
                self.optim.zero_grad()

        def train_epoch(self, loader):
            accum = self.accum
            for batch_idx, (x, y) in enumerate(loader):
                my_context = self.model.no_sync if CHOICE else nullcontext
                with my_context():
                    loss = (self.model(x) - y).pow(2).mean() / accum
                    loss.backward()
                self.update_step(batch_idx)
"""


def test_a_choice_compared_with_the_gate_of_a_step_in_another_method() -> None:
    # FunASR's shape: the bound method chosen into a variable, the step gated in `update_step`; `accum` and
    # `self.accum` are taken for one number by their names only, so the finding is possible
    assert _found(METHODS.replace("CHOICE", "batch_idx % accum != 0")) == [("GL006", 20, "possible")]
    assert _found(METHODS.replace("CHOICE", "(batch_idx + 1) % accum != 0")) == []
