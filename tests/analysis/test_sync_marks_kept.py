"""A DDP forward's gradient sync travels with its output into the loss (GL006), whatever reads it.

Two true GL006 of the sweep (yolov7's train.py and train_aux.py) were lost once plain classes of another
file were constructed (cf907c0): `compute_loss(pred, targets)` of a `ComputeLossOTA` whose `__call__` was
not followed became a call the analysis cannot read, and such a call kept what its arguments reach but not
the sync state of the forward passes that made them; a loop over the output (`for pi in pred:`, in the
loss functions that are followed) dropped it the same way. Both now keep it, as arithmetic on the output does.
"""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source


def codes(text: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(text)]


LOOP = """\
import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

{prelude}

def train(model, loader, accumulate, losses):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model = DDP(model)
    for i, (imgs, targets) in enumerate(loader):
        with {sync}:
            pred = model(imgs)
            loss = {loss} / accumulate
            loss.backward()
        if (i + 1) % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

NO_SYNC = "model.no_sync() if (i + 1) % accumulate else contextlib.nullcontext()"

PER_SCALE = '''
def per_scale_loss(p, targets):
    total = 0
    for pi in p:
        total = total + (pi - targets).abs().mean()
    return total
'''

LOSSES = {
    "unreadable-callable": ("", "losses[0](pred, targets)"),
    "loop-over-output": (PER_SCALE, "per_scale_loss(pred, targets)"),
}


@pytest.mark.parametrize(("prelude", "loss"), LOSSES.values(), ids=LOSSES.keys())
def test_every_micro_batch_all_reduces_through_the_loss(prelude: str, loss: str) -> None:
    text = LOOP.format(prelude=prelude, sync="contextlib.nullcontext()", loss=loss)
    line = text.splitlines().index("            loss.backward()") + 1
    assert (line, "GL006") in codes(text)


@pytest.mark.parametrize(("prelude", "loss"), LOSSES.values(), ids=LOSSES.keys())
def test_silent_when_the_micro_batches_that_do_not_step_skip_the_sync(prelude: str, loss: str) -> None:
    text = LOOP.format(prelude=prelude, sync=NO_SYNC, loss=loss)
    assert [c for _, c in codes(text) if c == "GL006"] == []
