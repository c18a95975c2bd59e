"""A step leaves parameters whose `.grad` is None unchanged (every torch optimizer skips them), so a graph built
through them before the step still backpropagates (`flow.NULL_GRADS`): Smartphone-Crack-Detection (lockbox 41)
trains a CycleGAN with one optimizer, and the discriminators' turn, after `opt.zero_grad()`, reaches only the
discriminators (detached fakes); a certain GL009 said the later cycle terms would fail. Each case below was run:
PyTorch raises exactly where GL009 is expected."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

CYCLE = """\
import torch
from torch import nn


def train(epochs=2):
    g_ab, g_ba = nn.Linear(8, 8), nn.Linear(8, 8)
    d_a, d_b = nn.Sequential(nn.Linear(8, 1)), nn.Sequential(nn.Linear(8, 1))
    params = [*g_ab.parameters(), *g_ba.parameters(), *d_a.parameters(), *d_b.parameters()]
    opt = torch.optim.Adam(params, lr=1e-3)
    for _ in range(epochs):
        for real_a in torch.randn(4, 16, 8):
            real_b = real_a.flip(-1)
            fake_b = torch.tanh(g_ab(real_a))
            fake_a = torch.tanh(g_ba(real_b))
            rec_a = g_ba(fake_b)
            rec_b = g_ab(fake_a)
            {clear}
            loss_d = d_a(real_a).mean() - d_a(fake_a{detach}).mean() + d_b(real_b).mean() - d_b(fake_b{detach}).mean()
            loss_d.backward()
            opt.step()

            opt.zero_grad()
            loss_g = -d_b(torch.tanh(g_ab(real_a))).mean() - d_a(torch.tanh(g_ba(real_b))).mean()
            loss_g = loss_g + (rec_a - real_a).abs().mean() + (rec_b - real_b).abs().mean()
            loss_g.backward()
            opt.step()
"""
BACKWARD = 25  # `loss_g.backward()`


def _codes(clear: str, detach: str) -> list[tuple[int, str]]:
    report = analyse_text(CYCLE.format(clear=clear, detach=detach), "train.py")
    return [(d.line, d.code) for d in report.diagnostics if d.code != "GL000"]


@pytest.mark.parametrize("clear", ["opt.zero_grad()", "opt.zero_grad(set_to_none=True)",
                                   "for p in params:\n                p.grad = None"])
def test_a_step_over_parameters_whose_grads_are_none_changes_none_of_them(clear: str) -> None:
    assert _codes(clear, ".detach()") == []


@pytest.mark.parametrize(("clear", "detach"), [
    ("opt.zero_grad(set_to_none=False)", ".detach()"),  # zeros: Adam still moves them
    ("opt.zero_grad()", ""),  # the discriminators' loss reaches the generators: they have gradients
    ("opt.zero_grad()\n            g_ab.weight.grad = torch.ones_like(g_ab.weight)", ".detach()"),  # written by hand
])
def test_a_step_over_parameters_that_may_hold_gradients_makes_their_graphs_stale(clear: str, detach: str) -> None:
    offset = clear.count("\n")
    assert _codes(clear, detach) == [(BACKWARD + offset, "GL009")]
