"""What one backward event is (`analysis/recorder.py`): a backward call reached through one chain of
calls for one set of parameters. A helper called twice in a row is two losses summed into one step,
not a micro-batch left over from an earlier iteration; a helper called in a loop is one event that
accumulates; and a call site whose callers manage DDP's sync is judged over all its callers."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def codes(text: str) -> set[tuple[int, str]]:
    return {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics}


HELPER = """\
import torch
from torch import nn

D = nn.Linear(4, 1)
opt = torch.optim.Adam(D.parameters())


def backward_d(real, fake):
    loss = D(fake.detach()).mean() - D(real).mean()
    loss.backward()
    return loss


for real in torch.randn(10, 8, 4):
{body}
"""


def test_a_helper_called_twice_before_a_step_sums_two_losses() -> None:
    body = "    opt.zero_grad()\n    backward_d(real, torch.randn(8, 4))\n    backward_d(real, torch.randn(8, 4))\n    opt.step()"
    assert codes(HELPER.format(body=body)) == set()


def test_a_helper_called_twice_without_a_clear_still_leaks_across_steps() -> None:
    body = "    backward_d(real, torch.randn(8, 4))\n    backward_d(real, torch.randn(8, 4))\n    opt.step()"
    assert (17, "GL001") in codes(HELPER.format(body=body))


@pytest.mark.parametrize("calls", [1, 2])
def test_a_helper_accumulated_over_micro_batches_without_division_is_gl003(calls: int) -> None:
    body = "    for i, x in enumerate(torch.randn(4, 8, 4)):\n" + "        backward_d(real, x)\n" * calls + (
        "        if (i + 1) % 4 == 0:\n            opt.step()\n            opt.zero_grad()")
    assert any(code == "GL003" for _line, code in codes(HELPER.format(body=body)))


DDP_TRAINER = """\
import contextlib
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(torch.nn.Linear(4, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
N = 4


def training_step(x):
    loss = model(x).pow(2).mean() / N
    loss.backward()
    return loss.detach()


for step, x in enumerate(torch.randn(16, 3, 4)):
    if (step + 1) % N != 0 and {distributed}:
        with {context}:
            training_step(x)
    else:
        training_step(x)
    if (step + 1) % N == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_step_helper_called_under_no_sync_by_one_caller_is_managed() -> None:
    # HF Trainer's inner loop: `with model.no_sync(): self.training_step(...)` on micro-batches that do
    # not step, a plain call otherwise (ChatGLM-6B's ptuning/trainer.py, a sweep false alarm)
    text = DDP_TRAINER.format(distributed="torch.distributed.is_initialized()", context="model.no_sync()")
    assert not any(code == "GL006" for _line, code in codes(text))


def test_a_step_helper_never_called_under_no_sync_all_reduces_every_micro_batch() -> None:
    text = DDP_TRAINER.format(distributed="torch.distributed.is_initialized()", context="contextlib.nullcontext()")
    assert (12, "GL006") in codes(text)
