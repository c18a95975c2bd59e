"""The forward of an object made out of sight, of no class known or modelled, is not read: whether its result holds
the graphs it was given is an assumption, and a finding resting on it is possible.

LDM_CT's VAE training (lockbox 35, a certain GL009 false alarm) builds its loss with
`loss_fn = instantiate_from_config(lossconfig)` (a class named in a YAML file: LPIPSWithDiscriminator) and calls it
twice, after the autoencoder's step the second time, with `optimizer_idx=1`: that class runs its discriminator on
detached inputs on that turn, so nothing goes back through the autoencoder's graph. A loss of a class read that
does not detach is still certain, and raises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gradcheck_lint.api import check_source

SCRIPT = """\
import torch
from torch import nn
MAKE_IMPORT


class Disc(nn.Module):
    def __init__(self):
        super().__init__()
        self.discriminator = nn.Linear(4, 1)

    def forward(self, x, xrec, turn):
        if turn == 0:
            return (x - xrec).pow(2).mean() - self.discriminator(xrec).mean()
        return self.discriminator(DISC_INPUT).mean() - self.discriminator(x).mean()


def train(cfg, batches):
    model = nn.Linear(4, 4)
    loss_fn = MAKE_LOSS
    ae_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    d_opt = torch.optim.Adam(loss_fn.discriminator.parameters(), lr=1e-3)
    for x in batches:
        xrec = model(x)
        ae_loss = loss_fn(x, xrec, 0)
        ae_opt.zero_grad()
        ae_loss.backward()
        ae_opt.step()
        d_loss = loss_fn(x, xrec, 1)
        d_opt.zero_grad()
        d_loss.backward()
        d_opt.step()


train(None, [torch.randn(2, 4) for _ in range(3)])
print("ran")
"""


def _found(text: str) -> list[tuple[str, int, str]]:
    return [(d.code, d.line, d.certainty.value) for d in check_source(text, "train.py")]


def test_a_loss_made_out_of_sight_passes_on_graphs_only_by_assumption() -> None:
    text = SCRIPT.replace("MAKE_IMPORT", "from ldm.util import instantiate_from_config").replace(
        "MAKE_LOSS", "instantiate_from_config(cfg.lossconfig)").replace("DISC_INPUT", "xrec")
    assert [f for f in _found(text) if f[0] == "GL009"] == [("GL009", 30, "possible")]


def test_a_loss_of_a_class_read_that_keeps_the_graph_is_certain(tmp_path: Path) -> None:
    text = SCRIPT.replace("MAKE_IMPORT", "").replace("MAKE_LOSS", "Disc()").replace("DISC_INPUT", "xrec")
    assert ("GL009", 30, "certain") in _found(text)
    path = tmp_path / "train.py"
    path.write_text(text)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "RuntimeError" in run.stderr  # (the first backward freed the graph it reuses)


def test_a_loss_of_a_class_read_that_detaches_is_silent(tmp_path: Path) -> None:
    text = SCRIPT.replace("MAKE_IMPORT", "").replace("MAKE_LOSS", "Disc()").replace("DISC_INPUT", "xrec.detach()")
    assert [f for f in _found(text) if f[0] == "GL009"] == []
    path = tmp_path / "train.py"
    path.write_text(text)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == ["ran"], run.stderr
