"""A helper a function calls sees the module's globals, also those the function takes as parameters of the same names.

MineGAN's `finetune(args, dataset, G_target, D_target, miner, miner_semantic)` is called from the script's main block
and calls `backward_G(...)`, a module-level helper that reads the global `miner` (`gen_in = miner(gen_in)`). The
globals handed to the functions `finetune` calls were only those `finetune` did not itself take as parameters, so
in the helper `miner` was unknown: the generator's loss reached no parameter of the miner its optimizer steps, and
the clear of the generator before that loss was reported as dropping the discriminator's gradients the step needed
(lockbox 14, GL002 certain).
"""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> set[tuple[str, str]]:
    return {(d.code, d.certainty) for d in analyse_text(text, "finetune.py").diagnostics}


MINER = """\
import argparse
import torch
from torch import optim
from torch.nn import functional as F
from model import Generator, Discriminator, Miner


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def finetune(args, loader, G, D, miner):
    for i, real in enumerate(loader):
        z = torch.randn(real.size(0), 512)
        D.zero_grad()
        requires_grad(D, True)
        backward_D(G, D, real, z)
        D_optimizer.step()

        G.zero_grad()
        miner.zero_grad()
        if i < args.stage1:
            requires_grad(miner, True)
            requires_grad(G, False)
        else:
            requires_grad(miner, True)
            requires_grad(G, True)
        requires_grad(D, False)
        backward_G(G, D, z)
        G_optimizer.step()


def backward_D(G, D, real, z):
    fake = G(miner(z))
    (F.softplus(-D(real)).mean() + F.softplus(D(fake)).mean()).backward()


def backward_G(G, D, z):
    F.softplus(-D(G(miner(z)))).mean().backward()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--stage1", type=int, default=100)
    args = parser.parse_args()
    G = Generator()
    D = Discriminator()
    miner = Miner()
    G_optimizer = optim.Adam(miner.parameters(), lr=1e-3)
    G_optimizer.add_param_group({"params": G.parameters()})
    D_optimizer = optim.Adam(D.parameters(), lr=1e-3)
    finetune(args, loader, G, D, miner)
"""


def test_the_helper_reads_the_global_the_caller_took_as_a_parameter():
    assert found(MINER) == set()


def test_a_clear_that_really_drops_the_generators_loss_is_still_found():
    # the generator's clear moved after its backward: the miner's gradients are gone before the step
    bug = MINER.replace("        G.zero_grad()\n        miner.zero_grad()\n", "").replace(
        "        backward_G(G, D, z)\n", "        backward_G(G, D, z)\n        miner.zero_grad()\n")
    assert "GL002" in {c for c, _ in found(bug)}
