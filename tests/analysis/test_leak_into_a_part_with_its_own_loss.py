"""GL005 where the generator's loss runs a whole loss module (`loss_fn(x, rec)`: a reconstruction term beside an
adversarial one through its `discriminator`) and the discriminator's own loss then runs only that part
(`loss_fn.disc_loss(x, rec)`): the discriminator's optimizer, cleared before the generator's backward, applies both.
The discriminator's own pass sits on the part its optimizer owns, not on the whole module the leak was found on; it
witnesses the leak all the same (certain; lockbox 25's VQGAN bug was found only as possible). Cleared after the
generator's backward, nothing is reported."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

VQGAN = """
import torch
from torch import nn


class GanLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Linear(8, 8)
        self.discriminator = nn.Linear(8, 1)
        self.disc_opt = torch.optim.Adam(self.discriminator.parameters())

    def forward(self, inputs, rec):
        return (inputs - rec).abs().mean() + self.features(rec).mean() - self.discriminator(rec).mean()

    def disc_loss(self, inputs, rec):
        return self.discriminator(rec.detach()).mean() - self.discriminator(inputs).mean()


def train(loader):
    autoencoder = nn.Linear(8, 8)
    loss_fn = GanLoss()
    optimizer = torch.optim.Adam(autoencoder.parameters())
    for x in loader:
        optimizer.zero_grad()
{early}        rec = autoencoder(x)
        loss = loss_fn(x, rec)
        loss.backward()
        optimizer.step()
{late}        d_loss = loss_fn.disc_loss(x, rec)
        d_loss.backward()
        loss_fn.disc_opt.step()
"""
CLEAR = "        loss_fn.disc_opt.zero_grad()\n"


@pytest.mark.parametrize("early, late, expected", [
    (CLEAR, "", [("GL005", "certain")]),
    ("", CLEAR, []),
], ids=["cleared-before-the-generator", "cleared-after-the-generator"])
def test_a_leak_into_a_part_with_a_loss_of_its_own_is_certain(early: str, late: str, expected: list[tuple[str, str]]) -> None:
    text = VQGAN.format(early=early, late=late)
    found = [(d.code, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics if d.code == "GL005"]
    assert found == expected
