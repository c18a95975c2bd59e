"""Autograd records a parameter in a graph when the forward runs: a module frozen on every path when it runs is written
by no backward of that result. VQFR's generator pass (lockbox 24) runs the discriminator frozen under
`if current_iter > start:`, and unfreezes it under the same test after the generator's step; the pass's loss, joined
after the `if` with the arm that never ran the discriminator, was read as writing it on paths where it was trainable: a
certain GL005 at the discriminator's step."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

GAN = """\
import torch


def main(net_g, net_d, loader, warm):
    optimizer_g = torch.optim.Adam(net_g.parameters())
    optimizer_d = torch.optim.Adam(net_d.parameters())
    for i, (x, gt) in enumerate(loader):
        optimizer_g.zero_grad()
        fake = net_g(x)
        l_total_g = (fake - gt).abs().mean()
        if i > warm:
            FREEZE
            l_total_g += -net_d(fake).mean()
        l_total_g.backward()
        optimizer_g.step()
        if i > warm:
            for p in net_d.parameters():
                p.requires_grad = True
            optimizer_d.zero_grad()
            l_d = net_d(fake.detach()).mean() - net_d(gt).mean()
            l_d.backward()
            optimizer_d.step()
"""
FREEZE = "for p in net_d.parameters():\n                p.requires_grad = False"


def _found(tmp_path: Path, text: str) -> list[tuple[str, int]]:
    path = tmp_path / "gan.py"
    path.write_text(text)
    settings = Settings.default().with_enabled(frozenset({f"GL00{i}" for i in range(1, 10)}))
    return [(d.code, d.line) for d in analyse_text(text, str(path), settings).diagnostics]


def test_a_discriminator_frozen_when_the_generator_s_pass_runs_it_gets_nothing_from_that_pass(tmp_path: Path) -> None:
    assert _found(tmp_path, GAN.replace("FREEZE", FREEZE)) == []
    # VQFR's own shape: the discriminator is never cleared, a GL001 of its own passes; the generator's pass adds nothing
    never_cleared = GAN.replace("FREEZE", FREEZE).replace("            optimizer_d.zero_grad()\n", "")
    assert _found(tmp_path, never_cleared) == [("GL001", 22)]


def test_without_the_freeze_the_leak_is_reported(tmp_path: Path) -> None:
    # no freeze and no clear of the discriminator: its step applies what the generator's pass wrote into it
    unfrozen = GAN.replace("            FREEZE\n", "").replace("            optimizer_d.zero_grad()\n", "")
    assert ("GL005", 20) in _found(tmp_path, unfrozen)
