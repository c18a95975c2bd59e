"""A window gated by `continue` on a counter the loop resets (yanmtt's multistep optimizer: `n += 1; if n < N:
continue; optimizer.step(); n = 0`) is an accumulation window like `if i % N != 0: continue`: a clear at the top of
each micro-batch empties it before the step (GL002). Cleared after the step, silent."""

import pytest

from support import lines_of

LOOP = """
import torch


def run(model, optimizer, loader, args):
    n = 0
    for x, y in loader:
{clear_top}        loss = model(x).sum() / args.multistep_optimizer_steps
        loss.backward()
        n += 1
        if n < args.multistep_optimizer_steps:
            continue
        optimizer.step()
{clear_after}        n = 0
"""
CLEAR = "optimizer.zero_grad()\n"


TWO_ARMS = """
import torch


def run(model, optimizer, scaler, loader, args):
    n = 0
    for x, y in loader:
{clear_top}        loss = model(x).sum() / args.multistep_optimizer_steps
        if args.fp16:
            scaler.scale(loss).backward()
            n += 1
            if n < args.multistep_optimizer_steps:
                continue
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            n += 1
            if n < args.multistep_optimizer_steps:
                continue
            optimizer.step()
{clear_after}        n = 0
"""


# (TWO_ARMS is yanmtt's real loop: an fp16 and an fp32 arm, each counting, guarding and stepping the same way)
@pytest.mark.parametrize("loop", [LOOP, TWO_ARMS], ids=["one-guard", "guard-in-two-arms"])
@pytest.mark.parametrize("top, expected", [(True, [8]), (False, [])], ids=["cleared-each-micro-batch", "cleared-after-step"])
def test_a_continue_guard_on_a_reset_counter_is_the_window(loop: str, top: bool, expected: list[int]) -> None:
    text = loop.format(clear_top="        " + CLEAR if top else "", clear_after="" if top else "        " + CLEAR)
    assert lines_of("GL002", text) == expected
