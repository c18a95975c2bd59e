"""A clip whose bound is infinite (`clip_grad_norm_(params, float("inf"))`, the usual way to measure the gradient
norm for a log) cuts nothing: it is a read of the norm, not a clip (catalogue: the `clip` effect's `limit`). On a
micro-batch that does not step it is no GL007 (DeepSeekRL-Extended, lockbox 32: a certain GL007 on a norm logged
after the window's step); a finite bound there still is."""

from __future__ import annotations

import pytest

from support import lines_of

LOOP = """\
import math
import numpy as np
import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters())
accum = 4
for step, x in enumerate(torch.randn(32, 8, 4)):
    loss = model(x).pow(2).mean() / accum
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), {bound}).item()
    if (step + 1) % accum == 0:
        optimizer.step()
        optimizer.zero_grad()
    print(grad_norm)
"""


@pytest.mark.parametrize("bound", ['float("inf")', "float('Inf')", "math.inf", "np.inf", "torch.inf",
                                   "max_norm=float('inf')"])
def test_an_infinite_bound_measures_the_norm_and_clips_nothing(bound: str) -> None:
    assert lines_of("GL007", LOOP.format(bound=bound)) == []


@pytest.mark.parametrize("bound", ["1.0", "max_norm=5.0"])
def test_a_finite_bound_on_a_micro_batch_that_does_not_step_is_reported(bound: str) -> None:
    assert lines_of("GL007", LOOP.format(bound=bound)) == [12]
