"""GL005's leak rests on which parameters the optimizer that applied the other model's pass first updates
(`Assumption.OWNERSHIP`): built in sight over the generator, the discriminator's gradients are not its own and the
leak is certain; handed in, or made by a helper out of sight, it might update the discriminator too (one optimizer
over both, `Adam(list(G.parameters()) + list(D.parameters()))`), and the finding is possible."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

GAN = """\
import torch


def train(G, D, loader, g_opt, make_g_opt):
    {g_opt}
    d_opt = torch.optim.Adam(D.parameters(), lr=1e-4)
    for real in loader:
        fake = G(torch.randn(real.size(0), 16))
        g_loss = -D(fake).mean()
        g_opt.zero_grad()
        g_loss.backward()
        g_opt.step()
        d_loss = D(real).mean() - D(fake.detach()).mean()
        d_loss.backward()
        d_opt.step()
        d_opt.zero_grad()
"""


@pytest.mark.parametrize(("g_opt", "possible"), [
    ("g_opt = torch.optim.Adam(G.parameters(), lr=1e-4)", False),
    ("pass", True),  # handed in
    ("g_opt = make_g_opt()", True),  # made out of sight
])
def test_the_first_consumers_ownership_decides_certainty(g_opt: str, possible: bool) -> None:
    found = analyse_text(GAN.format(g_opt=g_opt), "gan.py").diagnostics
    assert [(d.line, d.code, d.possible) for d in found] == [(15, "GL005", possible)]
