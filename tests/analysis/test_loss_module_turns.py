"""A GAN's loss module that detaches on the discriminator's turn (`loss(x, xrec, optimizer_idx=1)` of a VQGAN's
`LPIPSWithDiscriminator`), reached as a part of the model (`self.loss`), as the model's own `forward`
(`self.forward(x, optimizer_idx=1)`), or in another file: the discriminator's loss reaches the discriminator
only, so the generator's optimizer applies no gradient of it (no GL005/GL001 there), while the generator's loss
still writes into the discriminator its optimizer then steps on (GL005, true: nothing toggles `requires_grad`
in manual optimization).

Each false alarm came from a fact the analysis did not have: the class of a module stored on another
(`self.loss = LPIPSWithDiscriminator()` becomes a part of the model, its class forgotten), a flag the call
left at its default (`log_image=False`) read as either value, a large `forward` of another file left unread
past the reading budgets, and a helper calling `torch.autograd.grad` read as touching `.grad`."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import parse_expected_findings, project_tree

LOSS_CLASS = """
class LossD(nn.Module):
    def __init__(self, kind="hinge"):
        super().__init__()
        self.discriminator = nn.Linear(4, 1)
        self.disc_loss = hinge_d_loss if kind == "hinge" else vanilla_d_loss

    def adaptive_weight(self, nll_loss, g_loss, last_layer):
        nll_grads = torch.autograd.grad(nll_loss, last_layer, retain_graph=True)[0]
        g_grads = torch.autograd.grad(g_loss, last_layer, retain_graph=True)[0]
        return (torch.norm(nll_grads) / (torch.norm(g_grads) + 1e-4)).detach()

    def forward(self, inputs, reconstructions, optimizer_idx, last_layer=None):
        rec_loss = (inputs - reconstructions).abs().mean()
{padding}
        if optimizer_idx == 0:
            g_loss = -torch.mean(self.discriminator(reconstructions))
            return rec_loss + self.adaptive_weight(rec_loss, g_loss, last_layer) * g_loss, {{}}
        if optimizer_idx == 1:
            logits_real = self.discriminator(inputs.detach())
            logits_fake = self.discriminator(reconstructions.detach())
            return self.disc_loss(logits_real, logits_fake), {{"d": logits_real.detach().mean()}}
"""

FUNCTIONS = """
def hinge_d_loss(logits_real, logits_fake):
    return 0.5 * (torch.relu(1.0 - logits_real).mean() + torch.relu(1.0 + logits_fake).mean())


def vanilla_d_loss(logits_real, logits_fake):
    return 0.5 * (F.softplus(-logits_real).mean() + F.softplus(logits_fake).mean())
"""

IMPORTS = """
import torch
import torch.nn as nn
import torch.nn.functional as F
"""

# A Lightning module in manual optimization holding the autoencoder and the loss (with its discriminator).
VAE = """
class VAE(pl.LightningModule):
    def __init__(self, accumulate):
        super().__init__()
        self.net = nn.Linear(4, 4)
        self.loss = LossD()
        self.accumulate = accumulate
        self.automatic_optimization = False

    def configure_optimizers(self):
        opt_ae = torch.optim.Adam(self.net.parameters())
        opt_disc = torch.optim.Adam(self.loss.discriminator.parameters())
        return [opt_ae, opt_disc]

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        g_opt, d_opt = self.optimizers()
        pred = self(batch)
        aeloss, _ = self.loss(batch, pred, optimizer_idx=0, last_layer=self.net.weight)
        self.manual_backward(aeloss / self.accumulate)
        if (batch_idx + 1) % self.accumulate == 0:
            g_opt.step()
            g_opt.zero_grad()
        discloss, _ = self.loss(batch, pred, optimizer_idx=1, last_layer=self.net.weight)
        self.manual_backward(discloss / self.accumulate)
        if (batch_idx + 1) % self.accumulate == 0:
            d_opt.step()  # expect: GL005
            d_opt.zero_grad()
"""


def _found(path: Path) -> frozenset[tuple[int, str, str]]:
    report = analyse_text(path.read_text(), str(path), Settings.default())
    return frozenset((d.line, d.code, d.certainty.value) for d in report.diagnostics if d.code != "GL099")


def _padding(lines: int) -> str:
    """Statements that make the loss's `forward` large (a real one computes perceptual and KL terms)."""
    return "\n".join(f"        term_{i} = (inputs * {i} - reconstructions).pow(2).mean() * 0.0" for i in range(lines))


def test_a_loss_module_kept_on_the_model_detaches_on_the_discriminators_turn(tmp_path: Path) -> None:
    text = IMPORTS + "import lightning.pytorch as pl\n" + FUNCTIONS + LOSS_CLASS.format(padding=_padding(2)) + VAE
    path = project_tree(tmp_path / "one", {"vae.py": text}) / "vae.py"
    assert _found(path) == parse_expected_findings(path.read_text())


def test_a_large_loss_module_of_another_file_is_read(tmp_path: Path) -> None:
    # the loss's `forward` is well past the size of an inert function of another file read by default
    losses = IMPORTS + FUNCTIONS + LOSS_CLASS.format(padding=_padding(60))
    vae = IMPORTS + "import lightning.pytorch as pl\nfrom taming.losses import LossD\n" + VAE
    root = project_tree(tmp_path / "two", {"taming/__init__.py": "", "taming/losses.py": losses, "train_vae.py": vae})
    path = root / "train_vae.py"
    assert _found(path) == parse_expected_findings(path.read_text())


def test_a_leak_through_the_loss_module_is_still_found(tmp_path: Path) -> None:
    # the discriminator's turn without `detach()`: its loss writes into the autoencoder, whose optimizer steps on it
    text = IMPORTS + "import lightning.pytorch as pl\n" + FUNCTIONS + LOSS_CLASS.format(padding=_padding(2)) + VAE
    text = text.replace("self.discriminator(reconstructions.detach())", "self.discriminator(reconstructions)")
    path = project_tree(tmp_path / "leak", {"vae.py": text}) / "vae.py"
    line = text[:text.index("g_opt.step()")].count("\n") + 1
    assert {code for at, code, certainty in _found(path) if at == line and certainty == "certain"} & {"GL001", "GL005"}


# The model's own `forward` picks the turn; a flag the call leaves at its default (`log_image=False`) is that default.
OWN_FORWARD = """
import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F


class VQGAN(pl.LightningModule):
    def __init__(self, n):
        super().__init__()
        self.encoder = nn.Linear(4, 4)
        self.decoder = nn.Linear(4, 4)
        self.image_discriminator = nn.Linear(4, 1)
        self.grad_accumulates = n
        self.automatic_optimization = False

    def configure_optimizers(self):
        opt_ae = torch.optim.Adam(list(self.encoder.parameters()) + list(self.decoder.parameters()))
        return [opt_ae, torch.optim.Adam(self.image_discriminator.parameters())], []

    def forward(self, x, optimizer_idx=None, log_image=False):
        x_recon = self.decoder(self.encoder(x))
        if log_image:
            return x, x_recon
        if optimizer_idx == 0:
            return F.l1_loss(x_recon, x), -torch.mean(self.image_discriminator(x_recon))
        if optimizer_idx == 1:
            logits_real = self.image_discriminator(x.detach())
            logits_fake = self.image_discriminator(x_recon.detach())
            return torch.relu(1 - logits_real).mean() + torch.relu(1 + logits_fake).mean()
        return x_recon

    def training_step(self, batch, batch_idx):
        opt1, opt2 = self.optimizers()
        recon_loss, aeloss = {call0}
        self.manual_backward((recon_loss + aeloss) / self.grad_accumulates)
        if (self.global_step + 1) % self.grad_accumulates == 0:
            opt1.step()
            opt1.zero_grad()
        discloss = {call1}
        self.manual_backward(discloss / self.grad_accumulates)
        if (self.global_step + 1) % self.grad_accumulates == 0:
            opt2.step()  # expect: GL005
            opt2.zero_grad()
"""


def _own_forward(call: str) -> tuple[frozenset[tuple[int, str, str]], frozenset[tuple[int, str, str]]]:
    text = OWN_FORWARD.format(call0=call.format(idx=0), call1=call.format(idx=1))
    found = check_source(text, "vqgan.py", settings=Settings.default())
    return frozenset((d.span.line, d.code, d.certainty.value) for d in found), parse_expected_findings(text)


def test_the_models_own_forward_called_by_name_with_a_flag_left_at_its_default() -> None:
    found, expected = _own_forward("self.forward(batch, optimizer_idx={idx})")
    assert found == expected


def test_the_model_called_with_a_flag_left_at_its_default() -> None:
    found, expected = _own_forward("self(batch, optimizer_idx={idx})")
    assert found == expected


def test_a_flag_passed_explicitly_still_decides() -> None:
    # `log_image=True` returns the images: no loss, so the two losses below are the images' graphs
    found, _ = _own_forward("self.forward(batch, optimizer_idx={idx}, log_image=False)")
    assert {code for _, code, _ in found} == {"GL005"}


# A function run with arguments the analysis cannot see keeps its flags open.
MAIN = """
import torch

def main(clear=True):
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in [torch.randn(2, 4)] * 8:
        if clear:
            opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()

{run}
"""


def _gl001(run: str) -> list[int]:
    text = textwrap.dedent(MAIN.format(run=run))
    return [d.span.line for d in check_source(text, "main.py", settings=Settings.default())
            if d.code == "GL001"]


def test_a_default_the_call_in_sight_leaves_is_the_value() -> None:
    assert _gl001("main()") == []


def test_a_default_of_a_function_run_out_of_sight_stays_open() -> None:
    assert _gl001("import fire\nfire.Fire(main)") == [11]
