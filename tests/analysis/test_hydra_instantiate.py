"""`hydra.utils.instantiate(cfg, params=ps)` builds an optimizer over `ps`, of the configuration's class: a plain
`torch.optim.Optimizer` is assumed, and a finding that rests on its `step()`/`zero_grad()` is possible with
that assumption (`Assumption.CLASS`). Without `params=` it may build anything, and stays a call the
analysis cannot read (NeMo's audio codec builds its two GAN optimizers so)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.provenance import Assumption
from gradcheck_lint.diagnostics import Certainty

SPELLINGS = {
    "from": ("from hydra.utils import instantiate\n", "instantiate"),
    "module": ("import hydra\n", "hydra.utils.instantiate"),
    "alias": ("from hydra import utils as hu\n", "hu.instantiate"),
    "call": ("from hydra.utils import call\n", "call"),
}

GAN = """\
import itertools
import pytorch_lightning as pl
from torch import nn
{imports}

class Codec(pl.LightningModule):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.encoder = nn.Linear(4, 4)
        self.decoder = nn.Linear(4, 4)
        self.discriminator = nn.Linear(4, 1)
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        optim_gen, optim_disc = self.optimizers()
        fake = self.decoder(self.encoder(batch))
        if batch_idx % 2 == 0:
            {disc_clear}
            loss_disc = self.discriminator(fake.detach()).mean() - self.discriminator(batch).mean()
            self.manual_backward(loss_disc)
            optim_disc.step()
            optim_disc.zero_grad()
        loss_gen = -self.discriminator(fake).mean() + (batch - fake).abs().mean()
        self.manual_backward(loss_gen)
        optim_gen.step()
        optim_gen.zero_grad()

    def configure_optimizers(self):
        gen = itertools.chain(self.encoder.parameters(), self.decoder.parameters())
        optim_g = {build}(self.cfg.optim, params=gen)
        optim_d = {build}(self.cfg.optim, params=self.discriminator.parameters())
        return [optim_g, optim_d]
"""


def _gan(spelling: str, disc_clear: str = "pass") -> str:
    imports, build = SPELLINGS[spelling]
    return GAN.format(imports=imports, build=build, disc_clear=disc_clear)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_leak_between_optimizers_hydra_builds_is_possible(spelling: str) -> None:
    found = [(d.code, d.span.line, d.certainty, d.assumptions) for d in check_source(_gan(spelling), "codec.py")]
    assert found == [("GL005", 23, Certainty.POSSIBLE, (Assumption.CLASS.value,))]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_the_discriminator_cleared_before_its_pass_is_silent(spelling: str) -> None:
    assert check_source(_gan(spelling, disc_clear="optim_disc.zero_grad()"), "codec.py") == []


SCRIPT = """\
from hydra.utils import instantiate
{model}
optimizer = {optimizer}
scheduler = instantiate(cfg.scheduler, optimizer=optimizer)
for x, y in loader:
    {clear}
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
    scheduler.step()
"""


@pytest.mark.parametrize("model", ["model = instantiate(cfg.model)", "import torch\nmodel = torch.nn.Linear(4, 1)"])
def test_an_optimizer_hydra_builds_that_nothing_clears_is_gl001(model: str) -> None:
    text = SCRIPT.format(model=model, optimizer="instantiate(cfg.optim, params=model.parameters())", clear="pass")
    found = [(d.code, d.certainty, d.assumptions) for d in check_source(text, "train.py")]
    assert found == [("GL001", Certainty.POSSIBLE, (Assumption.CLASS.value,))]


@pytest.mark.parametrize("clear", ["optimizer.zero_grad()", "model.zero_grad()"])
def test_an_optimizer_hydra_builds_cleared_is_silent(clear: str) -> None:
    text = SCRIPT.format(model="model = instantiate(cfg.model)",
                         optimizer="instantiate(cfg.optim, params=model.parameters())", clear=clear)
    assert check_source(text, "train.py") == []


def test_instantiate_without_params_builds_no_optimizer() -> None:
    # `instantiate(cfg.scheduler, optimizer=...)` is stepped every batch and never cleared: no optimizer of
    # its own (the torch optimizer is cleared), so nothing to report
    text = SCRIPT.format(model="import torch\nmodel = torch.nn.Linear(4, 1)",
                         optimizer="torch.optim.SGD(model.parameters(), lr=0.1)", clear="optimizer.zero_grad()")
    assert check_source(text, "train.py") == []


def test_instantiate_without_params_stays_unknown() -> None:
    # the object `instantiate(cfg.trainer)` builds is not taken for an optimizer of the model's parameters
    # (it is unknown: whatever its methods do to gradients is not read, as before the hydra rows)
    text = """\
from hydra.utils import instantiate
import torch

model = torch.nn.Linear(4, 1)
helper = instantiate(cfg.helper)
for x, y in loader:
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    helper.step()
"""
    assert check_source(text, "train.py") == []
