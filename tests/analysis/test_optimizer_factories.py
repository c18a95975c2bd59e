"""A factory of optimizers kept on an object (Hydra's partial `self.hparams.optimizer(groups)`): a callable named like
an optimizer, handed parameters, makes an optimizer over them (a name heuristic: findings resting on it are `possible`).
optispeech's GAN (lockbox 25) built both of its optimizers so, and its misplaced clears went unread."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

GAN = """\
import torch
from lightning import LightningModule


class GAN(LightningModule):
    def __init__(self, optimizer):
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.generator = torch.nn.Linear(4, 4)
        self.discriminator = torch.nn.Linear(4, 1)

    def configure_optimizers(self):
        opt_g = self.hparams.FACTORY([{"params": self.generator.parameters()}])
        opt_d = self.hparams.FACTORY([{"params": self.discriminator.parameters()}])
        return [opt_g, opt_d], []

    def training_step(self, batch, batch_idx):
        step = (batch_idx + 1) % 4 == 0
        opt_g, opt_d = self.optimizers()
        self.toggle_optimizer(opt_g)
        loss_g = -self.discriminator(self.generator(batch)).mean() / 4
        CLEAR_G
        self.manual_backward(loss_g)
        if step:
            opt_g.step()
            AFTER_G
        self.untoggle_optimizer(opt_g)
        self.toggle_optimizer(opt_d)
        loss_d = self.discriminator(self.generator(batch).detach()).mean() / 4
        self.manual_backward(loss_d)
        if step:
            opt_d.step()
            opt_d.zero_grad()
        self.untoggle_optimizer(opt_d)
"""
BEFORE = "if step:\n            opt_g.zero_grad()"


def _found(tmp_path: Path, text: str) -> list[tuple[str, int, bool]]:
    path = tmp_path / "gan.py"
    path.write_text(text)
    settings = Settings.default().with_enabled(frozenset({f"GL00{i}" for i in range(1, 10)}))
    report = analyse_text(text, str(path), settings)
    return [(d.code, d.line, d.possible) for d in report.diagnostics]


def test_a_configured_factory_named_optimizer_makes_the_optimizers_over_the_groups_it_is_handed(tmp_path: Path) -> None:
    buggy = GAN.replace("FACTORY", "optimizer").replace("CLEAR_G", BEFORE).replace("            AFTER_G\n", "")
    assert _found(tmp_path, buggy) == [("GL002", 24, True)]


def test_the_clear_after_the_step_is_silent(tmp_path: Path) -> None:
    fixed = GAN.replace("FACTORY", "optimizer_cls").replace("        CLEAR_G\n", "")
    fixed = fixed.replace("AFTER_G", "opt_g.zero_grad()")
    assert _found(tmp_path, fixed) == []


def test_a_callable_of_another_name_is_no_optimizer(tmp_path: Path) -> None:
    # `self.hparams.scheduler(groups)` names no optimizer: nothing is taken for one
    other = GAN.replace("FACTORY", "builder").replace("CLEAR_G", BEFORE).replace("            AFTER_G\n", "")
    assert _found(tmp_path, other) == []


def test_which_names_the_heuristic_takes() -> None:
    from gradcheck_lint.analysis.apimodels import catalogue_for

    cat = catalogue_for()
    for name in ("optimizer", "optimizer_partial", "opt_fn", "optim_cls", "OptimizerClass"):
        row = cat.callee_heuristic(name)
        assert row is not None and any(e.kind == "construct" for e in row.effects), name
    for name in ("optimize", "optimizers_done", "opt", "options"):
        row = cat.callee_heuristic(name)
        assert row is None or not any(e.kind == "construct" for e in row.effects), name
