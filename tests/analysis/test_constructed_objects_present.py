"""An object the code constructs from a class it defines (`DModel()`, a `torch.optim.Optimizer` subclass) is never None:
`if net is not None:` of a freeze helper handed it goes one way on every call. Chinese-Character-Style-Transfer's
(lockbox 24) `set_requires_grad(self.netD, True)` before the discriminator's clear was read as possibly skipped, so the
freeze at the end of the previous step left the discriminator frozen: a certain GL002 ("the step sees no gradient")."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

GAN = """\
import torch
import torch.nn as nn


class DModel(nn.Module):
    def initialize(self, opt):
        self.body = nn.Linear(4, 1)

    def forward(self, x):
        return self.body(x)


class GAN(nn.Module):
    def initialize(self, opt):
        self.optm_d = opt.optm_d
        self.netD = DModel()
        self.netD.initialize(opt)
        self.optimizer_D = torch.optim.Adam(self.netD.parameters())

    def set_requires_grad(self, nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            if net is not None:
                for param in net.parameters():
                    param.requires_grad = requires_grad

    def optimize_parameters(self, x):
        UNFREEZE
        self.optimizer_D.zero_grad()
        loss_D = self.netD(x).mean()
        loss_D.backward()
        if self.optm_d:
            self.optimizer_D.step()
        self.set_requires_grad(self.netD, False)


def main(opt, loader):
    model = GAN()
    model.initialize(opt)
    for epoch in range(10):
        for x in loader:
            model.optimize_parameters(x)
"""


def _found(tmp_path: Path, text: str) -> list[tuple[str, int]]:
    path = tmp_path / "gan.py"
    path.write_text(text)
    settings = Settings.default().with_enabled(frozenset({f"GL00{i}" for i in range(1, 10)}))
    report = analyse_text(text, str(path), settings)
    return [(d.code, d.line) for d in report.diagnostics if not d.possible]


def test_a_helper_s_none_test_of_a_constructed_module_goes_one_way(tmp_path: Path) -> None:
    assert _found(tmp_path, GAN.replace("UNFREEZE", "self.set_requires_grad(self.netD, True)")) == []


def test_a_discriminator_frozen_for_good_after_its_first_step_is_still_reported(tmp_path: Path) -> None:
    # never unfrozen: from the second step on its backward writes nothing and its step sees no gradient
    assert _found(tmp_path, GAN.replace("        UNFREEZE\n", "")) == [("GL002", 29)]
