"""A `while` loop inside the loop that draws batches, fetching nothing and reading the drawn batch whole, runs again
on that batch: DROID-SLAM's random restarts (`r = 0; while r < restart_prob: r = rng.random(); poses, disps =
model(Gs, images, disp0, ...); loss.backward(); Gs = poses[-1].detach()`) add terms of one objective, no
micro-batches to average (lockbox 22: a false certain GL003, after its opening; `for` loops were read so already).
A `while` loop that cuts the batch into micro-batches (`x = images[start:end]`) is still a window."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = '''
import numpy as np
import torch
from torch import nn


def train(loader, restart_prob, micro):
    model = nn.Linear(8, 8)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    rng = np.random.default_rng(0)
    for item in loader:
        images, targets = [x.float() for x in item]
        optimizer.zero_grad()
        state = torch.zeros_like(images)
        LOOP
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
'''

RESTARTS = '''r = 0
        while r < restart_prob:
            r = rng.random()
            pred = model(images + state)
            loss = nn.functional.mse_loss(pred, targets)
            loss.backward()
            state = pred.detach()'''

MICRO = '''start = 0
        while start < images.shape[0]:
            end = start + micro
            pred = model(images[start:end])
            loss = nn.functional.mse_loss(pred, targets[start:end])
            loss.backward()
            start = end'''


def codes(text: str) -> list[str]:
    return [d.code for d in analyse_text(text, "train.py").diagnostics]


def test_restarts_on_the_batch_drawn_are_no_window() -> None:
    assert "GL003" not in codes(SOURCE.replace("LOOP", RESTARTS))


def test_a_while_loop_cutting_the_batch_into_micro_batches_is_a_window() -> None:
    assert "GL003" in codes(SOURCE.replace("LOOP", MICRO))
