"""A method of a module whose name says it carries the graph (`netG_adv_loss` of a discriminator of another file) is
read even when the budget for other files' code is spent: left unread, that it runs the discriminator's parameters
rests on its name alone, and a GL009 through it is only `possible` (Vid-ODE's GAN, a real bug of the benchmark: its
generator's losses spend the budget first). Read, the graph is the discriminator's layer, a read fact: certain."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.engine import analyse_text
from gradcheck_lint.project.context import FOREIGN_WORK_BUDGET
from support import project_tree

REFINE_STEPS = 100  # small helpers of another file, each read: together past the budget
STATEMENTS = 10

DISCRIMINATOR = """\
import torch
from torch import nn


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(x)

    def netD_adv_loss(self, real, fake):
        return (self.forward(real) - 1).pow(2).mean() + self.forward(fake.detach()).pow(2).mean()

    def netG_adv_loss(self, fake):
        pred_fake = self.forward(fake)
        return (pred_fake - 1).pow(2).mean()
"""

TRAIN = """\
import torch
from models import refine
from models.gan import Discriminator


def main():
    netG, netD = torch.nn.Linear(8, 8), Discriminator()
    optimizer_netG = torch.optim.Adam(netG.parameters(), lr=1e-4)
    optimizer_netD = torch.optim.Adam(netD.parameters(), lr=1e-4)
    for x in torch.randn(4, 2, 8):
        fake = netG(x)
{refines}
        loss_netD = netD.netD_adv_loss(x, fake)
        loss_netG = netD.netG_adv_loss(fake)
        optimizer_netD.zero_grad()
        loss_netD.backward()
        optimizer_netD.step()
        optimizer_netG.zero_grad()
        loss_netG.backward()
        optimizer_netG.step()


if __name__ == "__main__":
    main()
"""


def _project(root: Path) -> Path:
    helpers = "\n\n".join(
        f"def refine_{k}(h):\n" + "".join(f"    h = h + torch.tanh(h * {i % 5 + 1}) * 0.01\n" for i in range(STATEMENTS))
        + "    return h\n" for k in range(REFINE_STEPS))
    refines = "".join(f"        fake = refine.refine_{k}(fake)\n" for k in range(REFINE_STEPS)).rstrip("\n")
    project_tree(root, {"models/__init__.py": "", "models/gan.py": DISCRIMINATOR,
                        "models/refine.py": "import torch\n\n\n" + helpers, "train.py": TRAIN.format(refines=refines)})
    return root / "train.py"


def test_the_helpers_spend_the_budget() -> None:
    assert REFINE_STEPS * (STATEMENTS + 1) > FOREIGN_WORK_BUDGET  # else the test shows nothing about the budget


def test_a_loss_method_of_another_file_is_read_past_the_budget(tmp_path: Path) -> None:
    path = _project(tmp_path)
    found = [(d.code, d.span.line, d.certainty.value, d.message) for d in analyse_text(path.read_text(), str(path)).diagnostics]
    [(code, line, certainty, message)] = found
    assert (code, certainty) == ("GL009", "certain")
    assert path.read_text().splitlines()[line - 1].strip() == "loss_netG.backward()"
    assert "models/gan.py:" in message and "`self.head(x)`" in message  # the layer read in the method's body


def test_it_raises_as_reported(tmp_path: Path) -> None:
    import pytest

    torch = pytest.importorskip("torch")
    path = _project(tmp_path)
    namespace = {"__name__": "not_main"}
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        torch.manual_seed(0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            namespace["main"]()
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "models" or m.startswith("models.")]:
            del sys.modules[name]
