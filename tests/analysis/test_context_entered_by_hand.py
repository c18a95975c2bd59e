"""A context entered by hand (`ctx.__enter__()` ... `finally: ctx.__exit__(None, None, None)`) is a context: the
statements between run in it, as a `with` body does. YOLO-Master's fix of its DDP accumulation (lockbox 11, after its
opening: it does not count there) enters `model.no_sync()` so on the micro-batches that do not step; read as never
entered, the fixed trainer still got GL006."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int]]:
    return sorted((d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics)


TRAINER = """\
from contextlib import nullcontext

import torch
from torch import nn


def train(model, loader, optimizer, accumulate, rank):
    model = nn.parallel.DistributedDataParallel(model)
    for i, batch in enumerate(loader):
        should_step = (i + 1) % accumulate == 0
        sync_context = model.no_sync() if rank != -1 and not should_step else nullcontext()
        ENTER
        loss = model(batch).sum() / accumulate
        try:
            loss.backward()
        finally:
            EXIT
        if should_step:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_the_backward_between_enter_and_exit_runs_without_sync() -> None:
    text = TRAINER.replace("ENTER", "sync_context.__enter__()").replace("EXIT", "sync_context.__exit__(None, None, None)")
    assert found(text) == []


def test_a_context_made_but_never_entered_leaves_sync_on() -> None:
    text = TRAINER.replace("ENTER", "pass").replace("EXIT", "pass")
    assert found(text) == [("GL006", 15)]


def test_the_context_ends_with_the_try_whose_finally_exits_it() -> None:
    text = TRAINER.replace("ENTER", "sync_context.__enter__()").replace("EXIT", "sync_context.__exit__(None, None, None)")
    # a second backward after the `try` runs with sync on again: it all-reduces on every micro-batch
    text = text.replace("        if should_step:\n", "        (model(batch).sum() / accumulate).backward()\n        if should_step:\n")
    assert found(text) == [("GL006", 18)]
