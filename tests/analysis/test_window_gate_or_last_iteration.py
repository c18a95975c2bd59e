"""`if (i + 1) % N == 0 or (i + 1) == num_iters:` in `for i in range(num_iters)`, the optimizer cleared at the start
of each window (`if i % N == 0: zero_grad()`): a step on the loop's last iteration closes a short window and the loop
is left, so no gradient outlives it; each run of the loop (each epoch) starts its index, and every window, anew.

Kaggle-vesuvius-9th's trainer (lockbox 29, a certain GL001 false alarm) clears in its epoch loop and steps in its step
method under this test. Read as one test that may hold anywhere in the window, the step on the last iteration went on
into more micro-batches that no clear preceded."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch


def train(model, loader, num_iters, accum, epochs, max_steps):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        batches = iter(loader)
        for i in range(num_iters):
            if i % accum == 0:
                optimizer.zero_grad(set_to_none=True)
            loss = model(next(batches)).mean() / accum
            loss.backward()
            if {gate}:
                optimizer.step()
"""


def gl001(gate: str) -> list[int]:
    return [d.line for d in analyse_text(LOOP.format(gate=gate), "train.py").diagnostics if d.code == "GL001"]


@pytest.mark.parametrize("gate", [
    "(i + 1) % accum == 0 or (i + 1) == num_iters",
    "(i + 1) % accum == 0 or i == num_iters - 1",
    "i + 1 == num_iters or (i + 1) % accum == 0",
])
def test_a_short_last_window_is_left_with_the_loop(gate: str) -> None:
    assert gl001(gate) == []


def test_a_step_at_another_bound_goes_on_into_the_window() -> None:
    """`(i + 1) == max_steps` is not the loop's last iteration: after that step the loop goes on, and the micro-batches
    up to the window's end add to gradients the step already applied."""
    assert gl001("(i + 1) % accum == 0 or (i + 1) == max_steps") == [14]
