"""A function handed the parameters between backward and step that clips their gradients keeps them: the
window goes on (xvr, lockbox 3: timm's `adaptive_clip_grad` under an alias hid a clear on every micro-batch).
A helper of unknown body whose name says it clears or steps still may."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

TRAINER = """\
import torch
{imports}
from torch import nn


class Trainer:
    def __init__(self, n_total_itrs, n_grad_accum_itrs=4):
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.Adam(self.model.parameters())
        self.n_total_itrs = n_total_itrs
        self.n_grad_accum_itrs = n_grad_accum_itrs

    def train(self):
        for itr in range(self.n_total_itrs):
            self._run_iteration(itr)

    def _run_iteration(self, itr):
        loss = self.model(torch.randn(8, 4)).pow(2).mean() / self.n_grad_accum_itrs
        self.optimizer.zero_grad()
        loss.backward()
        {helper}(self.model.parameters())
        if (itr + 1) % self.n_grad_accum_itrs == 0:
            self.optimizer.step()
"""


@pytest.mark.parametrize(("imports", "helper"), [
    ("from timm.utils.agc import adaptive_clip_grad as adaptive_clip_grad_", "adaptive_clip_grad_"),
    ("from timm.utils import dispatch_clip_grad", "dispatch_clip_grad"),
    ("from mylab.optim import adaptive_clip_grad_", "adaptive_clip_grad_"),
])
def test_a_clear_in_the_window_is_found_past_a_clipping_helper(imports: str, helper: str) -> None:
    found = check_source(TRAINER.format(imports=imports, helper=helper), "trainer.py")
    assert [(d.code, d.span.line) for d in found] == [("GL002", 19)]


def test_a_helper_whose_name_says_it_clears_may_clear() -> None:
    found = check_source(TRAINER.format(imports="from mylab.optim import clip_and_zero_grads", helper="clip_and_zero_grads"), "trainer.py")
    assert [d.code for d in found] == []
