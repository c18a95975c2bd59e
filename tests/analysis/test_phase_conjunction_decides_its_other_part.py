"""The failing arm of `if flag and <phase of the window>:` knows, where the phase part held, that the flag failed.

A DDP script built from an environment flag switches gradient sync off for the micro-batches that do not step,
and only when it runs on several processes:

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        model = DDP(model)
    ...
        if distributed and (i + 1) % accum != 0:
            with model.no_sync(): ...backward()
        else:
            ...backward()            # a non-stepping micro-batch comes here only where `distributed` is false

Two facts were lost. The `else:` arm of a conjunction learnt nothing (either part may have failed), so its plain
backward on a micro-batch that does not step was read as all-reducing through DDP (a false GL006). And the test
around `DDP(model)` was not remembered at all: a branch whose arm wraps a model for data parallelism was read as
set-up that cannot touch gradients, and `if distributed:` read through the name it was bound to (`bound_tests`)
was not counted as a part of the other test. Now the `else:` arm is split: on the phases where the phase part
held, the flag failed; and the wrapping's test is remembered, so that path has no wrapper (`arm_facts`)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SCRIPT = """\
import os

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
model = nn.Linear(4, 1)
if distributed:
    torch.distributed.init_process_group("gloo")
    model = DDP(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
data = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(16)]
for i, (x, y) in enumerate(data):
    if TEST:
        with model.no_sync():
            loss = nn.functional.mse_loss(model(x), y) / accum
            loss.backward()
    else:
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
"""


def _codes(text: str) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics]


def test_the_plain_arm_of_a_flag_and_a_phase_runs_unwrapped_on_micro_batches_that_do_not_step() -> None:
    assert _codes(SCRIPT.replace("TEST", "distributed and (i + 1) % accum != 0")) == []
    assert _codes(SCRIPT.replace("TEST", "(i + 1) % accum != 0 and distributed")) == []


def test_the_plain_arm_of_an_unrelated_flag_and_a_phase_still_all_reduces() -> None:
    """`use_sync_off` says nothing of the wrapping: where it is false, the plain backward goes through DDP."""
    text = SCRIPT.replace("TEST", "use_sync_off and (i + 1) % accum != 0").replace(
        "accum = 4\n", "accum = 4\nuse_sync_off = os.environ.get('SYNC_OFF') == '1'\nif use_sync_off:\n    print('off')\n")
    assert ("GL006", text.splitlines().index("        loss.backward()", 20) + 1) in _codes(text)


def test_a_wrapped_model_without_a_sync_switch_still_all_reduces_on_every_micro_batch() -> None:
    """The test of the wrapping is remembered: where it held, the plain backward on a non-stepping micro-batch is
    DDP's, still reported."""
    text = SCRIPT.replace("TEST", "False")
    assert ("GL006", text.splitlines().index("        loss.backward()", 20) + 1) in _codes(text)


def test_an_or_of_a_phase_and_a_flag_decides_its_flag_on_the_arm_that_held() -> None:
    """`if not distributed or (i + 1) % accum == 0: plain backward, else: no_sync`: the same fact spelt as an `or`."""
    text = SCRIPT.replace("TEST", "not distributed or (i + 1) % accum == 0")
    text = text.replace("""    if not distributed or (i + 1) % accum == 0:
        with model.no_sync():
            loss = nn.functional.mse_loss(model(x), y) / accum
            loss.backward()
    else:
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()""", """    if not distributed or (i + 1) % accum == 0:
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
    else:
        with model.no_sync():
            loss = nn.functional.mse_loss(model(x), y) / accum
            loss.backward()""")
    assert _codes(text) == []
