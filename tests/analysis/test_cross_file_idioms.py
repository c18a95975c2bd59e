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


# A VQGAN trainer handed the autoencoder (a model of another file): it builds the discriminator (sized by an
# attribute of the autoencoder) and one optimizer over the autoencoder's parts. The discriminator's loss is
# computed on the un-detached reconstruction and backpropagated after the discriminator alone is cleared; both
# steps come after both passes, so the autoencoder's step applies the discriminator's objective too.
VQGAN_MODELS = """\
    import torch
    from torch import nn


    class VQGAN(nn.Module):
        def __init__(self, channels=3):
            super().__init__()
            self.img_channels = channels
            self.encoder = nn.Conv2d(channels, 8, 3, padding=1)
            self.decoder = nn.Conv2d(8, channels, 3, padding=1)

        def forward(self, x):
            return self.decoder(self.encoder(x))

        def adopt_weight(self, factor, step, threshold=0):
            return factor if step >= threshold else 0.0


    class Discriminator(nn.Module):
        def __init__(self, image_channels=3):
            super().__init__()
            self.net = nn.Conv2d(image_channels, 1, 3)

        def forward(self, x):
            return self.net(x)
"""
VQGAN_TRAINER = """\
    import torch
    import torch.nn.functional as F

    from models import Discriminator


    class VQGANTrainer:
        def __init__(self, model):
            self.vqgan = model
            self.discriminator = Discriminator(image_channels=self.vqgan.img_channels)
            self.opt_vq = torch.optim.Adam(list(self.vqgan.encoder.parameters()) + list(self.vqgan.decoder.parameters()))
            self.opt_disc = torch.optim.Adam(self.discriminator.parameters())
            self.global_step = 0

        def step(self, imgs):
            decoded = self.vqgan(imgs)
            disc_real = self.discriminator(imgs)
            disc_fake = self.discriminator(decoded)
            disc_fake_d = self.discriminator({fake})
            disc_factor = self.vqgan.adopt_weight(1.0, self.global_step, threshold=100)
            vq_loss = (imgs - decoded).abs().mean() - disc_factor * disc_fake.mean()
            gan_loss = disc_factor * 0.5 * (F.relu(1.0 - disc_real).mean() + F.relu(1.0 + disc_fake_d).mean())
            self.opt_vq.zero_grad()
            vq_loss.backward(retain_graph=True)
            self.opt_disc.zero_grad()
            gan_loss.backward()
            self.opt_vq.step()  {expect}
            self.opt_disc.step()

        def train(self, loader):
            for imgs in loader:
                self.step(imgs)
                self.global_step += 1
"""


def test_a_loss_made_for_the_discriminator_leaks_into_the_autoencoder(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "bug", {"models.py": VQGAN_MODELS, "trainer.py": VQGAN_TRAINER.format(fake="decoded", expect="# expect: GL005")})
    path = root / "trainer.py"
    assert _found(path) == parse_expected_findings(path.read_text())


def test_the_discriminator_loss_on_a_detached_reconstruction_is_silent(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "ok", {"models.py": VQGAN_MODELS, "trainer.py": VQGAN_TRAINER.format(fake="decoded.detach()", expect="")})
    assert _found(root / "trainer.py") == frozenset()


# The discriminator's loss is a function of the module chosen in `__init__` and kept on `self`: calling
# `self.disc_loss(...)` runs that function on the discriminator's outputs, not a forward of the whole module.
STORED_LOSS = """\
    import pytorch_lightning as pl
    import torch
    from torch import nn


    def hinge_d_loss(logits_real, logits_fake):
        return torch.relu(1.0 - logits_real).mean() + torch.relu(1.0 + logits_fake).mean()


    def vanilla_d_loss(logits_real, logits_fake):
        return torch.nn.functional.softplus(-logits_real).mean() + torch.nn.functional.softplus(logits_fake).mean()


    class GAN(pl.LightningModule):
        def __init__(self, hinge=True):
            super().__init__()
            self.automatic_optimization = False
            self.generator = nn.Linear(8, 16)
            self.discriminator = nn.Linear(16, 1)
            if hinge:
                self.disc_loss = hinge_d_loss
            else:
                self.disc_loss = vanilla_d_loss

        def training_step(self, batch, batch_idx):
            z, real = batch
            opt_g, opt_d = self.optimizers()
            fake = self.generator(z)
            self.manual_backward(-self.discriminator(fake).mean())
            opt_g.step()
            opt_g.zero_grad()
            opt_d.zero_grad()
            self.manual_backward(self.disc_loss(self.discriminator(real), self.discriminator(fake.detach())))
            opt_d.step()

        def configure_optimizers(self):
            return [torch.optim.Adam(self.generator.parameters()), torch.optim.Adam(self.discriminator.parameters())]
"""


def test_a_loss_function_kept_on_self_reaches_only_what_it_is_given(tmp_path: Path) -> None:
    path = project_tree(tmp_path / "ok", {"gan.py": STORED_LOSS}) / "gan.py"
    assert _found(path) == frozenset()


# The VAE of another file holds its discriminator and returns either loss from its forward; the trainer, an
# nn.Module itself, keeps the VAE it is handed (`self.vae = vae`) and builds the discriminator's optimizer from
# the argument: one object under two names. The generator's loss runs the discriminator, and the
# discriminator's optimizer, cleared only after its own step, applies that with its own loss.
VAE_MODELS = """\
    import torch
    from torch import nn


    class VQGanVAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(16, 8)
            self.dec = nn.Linear(8, 16)
            self.discr = nn.Linear(16, 1)

        def forward(self, img, return_loss=False, return_discr_loss=False):
            recon = self.dec(self.enc(img))
            if return_discr_loss:
                return torch.relu(1 - self.discr(img)).mean() + torch.relu(1 + self.discr(recon.detach())).mean()
            if not return_loss:
                return recon
            return (recon - img).pow(2).mean() - self.discr(recon).mean()
"""
VAE_TRAINER = """\
    import torch
    from torch import nn


    class VQGanVAETrainer(nn.Module):
        def __init__(self, vae, accum=2):
            super().__init__()
            self.vae = vae
            self.accum = accum
            discr_parameters = list(vae.discr.parameters())
            self.optim = torch.optim.Adam(list(vae.enc.parameters()) + list(vae.dec.parameters()))
            self.discr_optim = torch.optim.Adam(discr_parameters)

        def train_step(self, loader):
            for _ in range(self.accum):
                loss = self.vae(next(loader), return_loss=True)
                (loss / self.accum).backward()
            self.optim.step()
            self.optim.zero_grad()
            {clear}for _ in range(self.accum):
                loss = self.vae(next(loader), return_discr_loss=True)
                (loss / self.accum).backward()
            self.discr_optim.step()  {expect}
            self.discr_optim.zero_grad()
"""


def test_a_model_kept_on_self_is_the_argument_it_was_handed(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "bug", {"vae.py": VAE_MODELS, "trainer.py": VAE_TRAINER.format(clear="", expect="# expect: GL005")})
    path = root / "trainer.py"
    assert _found(path) == parse_expected_findings(path.read_text())


def test_the_discriminator_cleared_before_its_own_window_is_silent(tmp_path: Path) -> None:
    clear = "self.discr_optim.zero_grad()\n            "
    root = project_tree(tmp_path / "ok", {"vae.py": VAE_MODELS, "trainer.py": VAE_TRAINER.format(clear=clear, expect="")})
    assert _found(root / "trainer.py") == frozenset()


# FastVocoder (lockbox 12): each optimizer wrapped in a `ScheduledOptim` whose one `self._optimizer.step()` steps
# both; the generator's loss reaches the discriminator, cleared only at the top of the step function.
WRAPPED_GAN = """\
    import torch
    import torch.nn as nn


    class ScheduledOptim:
        def __init__(self, optimizer):
            self._optimizer = optimizer

        def step_and_update_lr(self):
            self._optimizer.step()  {expect}

        def zero_grad(self):
            self._optimizer.zero_grad()


    G = nn.Linear(8, 16)
    D = nn.Linear(16, 1)


    def trainer(s_g, s_d, mel, wav):
        s_g.zero_grad()
        s_d.zero_grad()
        est = G(mel)
        total_loss = (est - wav).abs().mean() - D(est).mean()
        total_loss.backward()
        s_g.step_and_update_lr()
        {clear_d}d_loss = D(est.detach()).mean() - D(wav).mean()
        d_loss.backward()
        s_d.step_and_update_lr()


    s_g = ScheduledOptim(torch.optim.Adam(G.parameters()))
    s_d = ScheduledOptim(torch.optim.Adam(D.parameters()))
    for step in range(10):
        trainer(s_g, s_d, torch.randn(4, 8), torch.randn(4, 16))
"""


def test_two_optimizers_stepped_through_one_wrapper_line_are_two(tmp_path: Path) -> None:
    path = project_tree(tmp_path / "bug", {"t.py": WRAPPED_GAN.format(clear_d="", expect="# expect: GL005")}) / "t.py"
    assert _found(path) == parse_expected_findings(path.read_text())
    clear = "s_d.zero_grad()\n        "
    path = project_tree(tmp_path / "ok", {"t.py": WRAPPED_GAN.format(clear_d=clear, expect="")}) / "t.py"
    assert _found(path) == parse_expected_findings(path.read_text())
