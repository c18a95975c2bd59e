"""A sync choice called inline, `with (model.no_sync if i % N != 0 else nullcontext)():`, is read as its named form
`ctx = model.no_sync if ...; with ctx():` (supar's fixed trainer: a certain GL006 false alarm of lockbox 9's fixed
versions, found after its opening); the inverted choice is reported as GL006."""

from __future__ import annotations

from gradcheck_lint.api import check_source

INLINE = '''
from contextlib import nullcontext

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, update_steps):
    model = DDP(model)
    optimizer = torch.optim.Adam(model.parameters())
    for i, batch in enumerate(loader, 1):
        with (model.no_sync if i % update_steps != 0 else nullcontext)():
            loss = model(batch).mean() / update_steps
            loss.backward()
        if i % update_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
'''


def test_an_inline_sync_choice_off_on_the_micro_batches_that_do_not_step_is_clean() -> None:
    assert check_source(INLINE) == []


def test_an_inline_sync_choice_off_on_the_stepping_micro_batch_is_reported() -> None:
    inverted = INLINE.replace("i % update_steps != 0 else nullcontext", "i % update_steps == 0 else nullcontext")
    assert inverted != INLINE
    assert [(d.code, d.line) for d in check_source(inverted)] == [("GL006", 12)]
