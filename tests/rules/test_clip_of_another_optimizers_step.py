"""A clip over a whole model right before one optimizer's step, with no backward between, is that step's clip: it
bounds all the step applies. A second optimizer over another part of the same model (CompressAI's `.quantiles`,
stepped on an auxiliary loss after the main step) then gets more gradients after the clip; that its window was meant
to be clipped by it is the author's intent, not a fact read (ModulatedAtt x3, lockbox 43: "the clip sees only what
earlier backward passes left", of a clip that was the main optimizer's). The finding is `possible`. A clip that bounds
no step's whole window stays certain."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

AUX = """\
import torch

from models import find_net
from utils import configure_optimizers


def train_epoch(net, optimizers, loader):
    optimizer, aux_optimizer = optimizers
    for x in loader:
        optimizer.zero_grad()
        aux_optimizer.zero_grad()
        net(x).pow(2).mean().backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        aux_loss = net.aux_loss()
        aux_loss.backward()
        aux_optimizer.step()


net = find_net(\"mbt2018\")
optimizers = configure_optimizers(net)
for epoch in range(3):
    train_epoch(net, optimizers, torch.randn(8, 2, 4))
"""
CLIP = 13
UTILS = """\
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.quantiles = torch.nn.Parameter(torch.zeros(4))

    def forward(self, x):
        return self.body(x)

    def aux_loss(self):
        return self.quantiles.abs().sum()


def configure_optimizers(net):
    parameters = {n for n, p in net.named_parameters() if not n.endswith(".quantiles") and p.requires_grad}
    aux_parameters = {n for n, p in net.named_parameters() if n.endswith(".quantiles") and p.requires_grad}
    params_dict = dict(net.named_parameters())
    optimizer = torch.optim.Adam((params_dict[n] for n in sorted(parameters)), lr=1e-3)
    aux_optimizer = torch.optim.Adam((params_dict[n] for n in sorted(aux_parameters)), lr=1e-3)
    return optimizer, aux_optimizer
"""


def _gl007(tmp: Path, source: str) -> list[tuple[int, str]]:
    root = project_tree(tmp / "p", {"train.py": source, "utils.py": UTILS})
    return [(d.line, d.certainty.value) for d in lint_files([str(root / "train.py")], Settings.default())
            if d.code == "GL007"]


def test_the_main_steps_clip_is_not_said_to_cut_the_auxiliary_window_for_certain(tmp_path: Path) -> None:
    assert _gl007(tmp_path, AUX) == [(CLIP, "possible")]


def test_a_clip_that_bounds_no_whole_window_stays_certain(tmp_path: Path) -> None:
    # the main step moved after the auxiliary backward: the clip now sees part of both windows
    moved = AUX.replace("        optimizer.step()\n        aux_loss = net.aux_loss()\n        aux_loss.backward()\n",
                        "        aux_loss = net.aux_loss()\n        aux_loss.backward()\n        optimizer.step()\n")
    assert moved != AUX
    assert _gl007(tmp_path, moved) == [(CLIP, "certain")]
