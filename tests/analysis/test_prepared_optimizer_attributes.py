"""An optimizer accelerate's `prepare` returns is an `AcceleratedOptimizer`, which forwards no attribute to the optimizer
it wraps: `hasattr(optimizer, "first_step")` (duck typing of SAM) is False on it, whatever it wraps (checked with
accelerate 1.15), so the branch it guards never runs (Orbit's engine, lockbox 42: a certain GL006 and two GL007 in its
SAM branch). The attributes are catalogue data (`optimizer_attributes` of accelerate's `prepare`)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

SCRIPT = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
{prepare}
total = 0
for x in [torch.randn(2, 4)] * 8:
    loss = model(x).mean()
    accelerator.backward(loss)
    if hasattr(optimizer, "{name}"):
        total = total + loss
    optimizer.step()
    optimizer.zero_grad()
"""


@pytest.mark.parametrize(("prepare", "name", "expected"), [
    ("model, optimizer = accelerator.prepare(model, optimizer)", "first_step", []),
    ("optimizer = accelerator.prepare_optimizer(optimizer)", "first_step", []),
    # the wrapper's own attributes, and an optimizer nothing prepared, keep the branch
    ("model, optimizer = accelerator.prepare(model, optimizer)", "step_was_skipped", [(13, "GL008")]),
    ("pass", "first_step", [(13, "GL008")]),
])
def test_duck_typing_of_the_wrapped_optimizer_fails_on_the_prepared_one(prepare: str, name: str,
                                                                        expected: list[tuple[int, str]]) -> None:
    found = check_source(SCRIPT.format(prepare=prepare, name=name), "train.py")
    assert [(d.line, d.code) for d in found if d.code == "GL008"] == expected
