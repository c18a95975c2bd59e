"""GL005: a GAN's own losses summed into one backward, then both optimizers step (the joint-training reading's
exception by name: `checks/gl005_cross_model_grad_leak._adversaries_summed`).

`loss = lossDreal + lossDfake + lossG; loss.backward(); optimizerG.step(); optimizerD.step()` trains the
discriminator on the generator's loss too (Realistic-Neural-Talking-Head-Models, lockbox 30: missed, read as one
objective of two models stepped together). Only the names tell the summands' owners, so it is `possible`. A sum of
losses not named for the models, or named for an encoder and a decoder trained together, stays a joint objective."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree

LOOP = """\
import torch
from torch import nn

{a}, {b} = nn.Linear(2, 4), nn.Linear(4, 1)
opt_{a} = torch.optim.Adam({a}.parameters())
opt_{b} = torch.optim.Adam({b}.parameters())
for real in torch.randn(8, 4, 4):
    opt_{a}.zero_grad()
    opt_{b}.zero_grad()
    fake = {a}(torch.randn(4, 2))
    r_hat = {b}(fake)
    r = {b}(real)
    {first} = -r_hat.mean()
    {second} = torch.relu(1 + r_hat).mean()
    {third} = torch.relu(1 - r).mean()
    loss = {third} + {second} + 0.5 * {first}
    loss.backward()
    opt_{a}.step()
    opt_{b}.step()
"""
SECOND_STEP = 19


def _found(**names: str) -> list[tuple[int, str, str]]:
    found = check_source(LOOP.format(**names), "train.py", settings=Settings.default())
    return [(d.span.line, d.code, d.certainty.value) for d in found if d.code == "GL005"]


@pytest.mark.parametrize("names", [
    {"a": "G", "b": "D", "first": "lossG", "second": "lossDfake", "third": "lossDreal"},
    {"a": "netG", "b": "netD", "first": "g_loss", "second": "d_loss_fake", "third": "d_loss_real"},
])
def test_the_players_losses_summed_into_one_backward_leak_into_the_discriminator(names: dict[str, str]) -> None:
    assert _found(**names) == [(SECOND_STEP, "GL005", "possible")]


@pytest.mark.parametrize("names", [
    {"a": "G", "b": "D", "first": "adv", "second": "hinge_fake", "third": "hinge_real"},  # not named for the models
    {"a": "encoder", "b": "decoder", "first": "loss_enc", "second": "loss_dec", "third": "loss_rec"},  # no discriminator
])
def test_a_sum_not_named_for_a_discriminator_and_its_adversary_stays_one_objective(names: dict[str, str]) -> None:
    assert _found(**names) == []


STEP_FUNCTION = """\
import torch


def update(G, D, opt_G, opt_D, real):
    opt_G.zero_grad()
    opt_D.zero_grad()
    fake = G(torch.randn(4, 2))
    r_hat = D(fake)
    r = D(real)
    lossG = -r_hat.mean()
    lossDfake = torch.relu(1 + r_hat).mean()
    lossDreal = torch.relu(1 - r).mean()
    loss = lossDreal + lossDfake + 0.5 * lossG
    loss.backward()
    opt_G.step()
    opt_D.step()
"""
# (`build` spans the lines of the backward in the other file: a function of this file found by line number there
# binds no `loss`)
CALLER = """\
import torch
from torch import nn

from gan_step import update


def build():
    G, D = nn.Linear(2, 4), nn.Linear(4, 1)
    opt_G = torch.optim.Adam(G.parameters())
    opt_D = torch.optim.Adam(D.parameters())
    total = 0
    for i in range(3):
        total += i
    return G, D, opt_G, opt_D


def main():
    G, D, opt_G, opt_D = build()
    for real in torch.randn(8, 4, 4):
        update(G, D, opt_G, opt_D, real)
"""


def test_the_summands_of_a_backward_in_another_file_are_read_in_its_own_function(tmp_path: Path) -> None:
    project_tree(tmp_path, {"gan_step.py": STEP_FUNCTION, "train.py": CALLER})
    path = tmp_path / "train.py"
    found = [(d.span.line, d.code, d.certainty.value, d.message) for d in analyse_text(path.read_text(), str(path)).diagnostics]
    assert [(line, code, certainty) for line, code, certainty, _m in found] == [(20, "GL005", "possible")]
    assert "gan_step.py:14" in found[0][3]
