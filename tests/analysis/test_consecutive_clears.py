"""Two clears in a row of the same parameters (`opt.zero_grad(); model.zero_grad()`) between a backward and its step:
the first drops what the backward wrote, the second finds nothing to drop and leaves the first one's record. It erased
it before, so the gradients the step never saw went unreported (MelGenerator, lockbox 33: a missed GL002)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

LOOP = """\
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for x in [torch.randn(3, 4)] * 5:
    loss = model(x).pow(2).mean()
    loss.backward()
{between}
"""


def findings(between: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(LOOP.format(between=between))]


@pytest.mark.parametrize("clears", [
    "    opt.zero_grad()\n    model.zero_grad()",
    "    model.zero_grad()\n    opt.zero_grad()",
    "    opt.zero_grad()\n    opt.zero_grad(set_to_none=True)",
])
def test_the_first_of_two_clears_before_the_step_is_reported(clears: str) -> None:
    assert findings(clears + "\n    opt.step()") == [(8, "GL002")]


def test_two_clears_after_the_step_drop_nothing_it_needed() -> None:
    assert findings("    opt.step()\n    opt.zero_grad()\n    model.zero_grad()") == []
