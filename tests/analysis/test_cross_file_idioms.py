"""Training idioms whose evidence sits in other methods or files: a GAN kept in one module with an
optimizer per part, loss objects of another file called through `__call__`, losses summed per name."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import parse_expected_findings, project_tree


def _found(path: Path) -> frozenset[tuple[int, str, str]]:
    text = path.read_text()
    report = analyse_text(text, str(path), Settings.default().with_enabled(frozenset({"GL001", "GL002", "GL005", "GL008"})))
    return frozenset((d.line, d.code, d.certainty.value) for d in report.diagnostics)


# One module holds the generator and the discriminator (a LightningModule in manual optimization, a
# VQGAN): the generator's loss runs the discriminator on the un-detached fake, its optimizer steps, and
# the discriminator's optimizer, cleared only after its own step, then applies those gradients with its own.
GAN_MODULE = """\
    import pytorch_lightning as pl
    import torch
    from torch import nn


    class GAN(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False
            self.generator = nn.Linear(8, 16)
            self.discriminator = nn.Linear(16, 1)

        def training_step(self, batch, batch_idx):
            z, real = batch
            opt_g, opt_d = self.optimizers()
            fake = self.generator(z)
            g_loss = -self.discriminator(fake).mean()
            self.manual_backward(g_loss)
            opt_g.step()
            opt_g.zero_grad()
            {clear_d}d_loss = self.discriminator(fake.detach()).mean() - self.discriminator(real).mean()
            self.manual_backward(d_loss)
            opt_d.step()  {expect}
            opt_d.zero_grad()

        def configure_optimizers(self):
            return [torch.optim.Adam(self.generator.parameters()), torch.optim.Adam(self.discriminator.parameters())]
"""


def test_generator_loss_left_in_a_sibling_discriminator_is_a_leak(tmp_path: Path) -> None:
    path = project_tree(tmp_path / "bug", {"gan.py": GAN_MODULE.format(clear_d="", expect="# expect: GL005")}) / "gan.py"
    assert _found(path) == parse_expected_findings(path.read_text())


def test_discriminator_cleared_before_its_own_loss_is_silent(tmp_path: Path) -> None:
    clear = "opt_d.zero_grad()\n            "
    path = project_tree(tmp_path / "ok", {"gan.py": GAN_MODULE.format(clear_d=clear, expect="")}) / "gan.py"
    assert _found(path) == frozenset()


# The loss object lives in another file: `make_loss()` returns an instance whose `__call__` returns the total
# and a dict of the terms (still graphs); the trainer sums each term per name over the epoch.
LOSSES = """\
    import torch.nn.functional as F


    class DualLoss:
        def __init__(self, l1_weight):
            self.l1_weight = l1_weight

        def __call__(self, pred, target):
            terms = {"mse": F.mse_loss(pred, target), "l1": F.l1_loss(pred, target) * self.l1_weight}
            return sum(terms.values()), terms


    def make_loss(cfg):
        return DualLoss(cfg["l1_weight"])
"""
SOLVER = """\
    from collections import defaultdict

    import torch
    from torch import nn

    from losses import make_loss


    class Solver:
        def __init__(self, cfg):
            self.model = nn.Linear(4, 4)
            self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
            self.loss_fn = make_loss(cfg)

        def train_one_batch(self, x, y):
            self.optimizer.zero_grad()
            loss, terms = self.loss_fn(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            return terms

        def train_one_epoch(self, loader):
            totals = defaultdict(float)
            for x, y in loader:
                terms = self.train_one_batch(x, y)
                for name, value in terms.items():
                    totals[name] += {value}  {expect}
            return {{k: v / len(loader) for k, v in totals.items()}}


    Solver({{"l1_weight": 0.5}}).train_one_epoch([(torch.randn(2, 4), torch.randn(2, 4))] * 3)
"""


def test_loss_terms_summed_per_name_keep_their_graphs(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "bug", {"losses.py": LOSSES, "solver.py": SOLVER.format(value="value * x.shape[0]", expect="# expect: GL008")})
    path = root / "solver.py"
    assert _found(path) == parse_expected_findings(path.read_text())


def test_loss_terms_summed_as_numbers_are_silent(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "ok", {"losses.py": LOSSES, "solver.py": SOLVER.format(value="value.item() * x.shape[0]", expect="")})
    assert _found(root / "solver.py") == frozenset()
