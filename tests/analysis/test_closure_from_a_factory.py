"""A nested `def` read as a value is a function that calling runs: a factory method returning its closure
(`return closure`), bound to a name (`closure = self._setup_closure(opt, x)`) and handed to `optimizer.step(closure)`,
runs there, on the values the factory's names had when it made it (lockbox 35's AIJack bug: the loss the closure
returns is logged every iteration, its graph with it; missed because the closure was resolved by its name only)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gradcheck_lint.api import check_source

ATTACK = """\
import torch


class Attack:
    def __init__(self, model):
        self.model = model
        self.log_loss = []

    def _setup_closure(self, optimizer, fake_x, target):
        def closure():
            optimizer.zero_grad()
            distance = ((self.model(fake_x) - target) ** 2).sum()
            distance.backward(retain_graph=True)
            return RETURNED

        return closure

    def attack(self, target, steps):
        fake_x = torch.randn(4, 3, requires_grad=True)
        optimizer = torch.optim.LBFGS([fake_x], max_iter=2)
        for i in range(steps):
            closure = self._setup_closure(optimizer, fake_x, target)
            distance = optimizer.step(closure)
            self.log_loss.append(distance)
        return fake_x


attack = Attack(torch.nn.Linear(3, 2))
attack.attack(torch.randn(4, 2), 3)
print(type(attack.log_loss[-1]).__name__, getattr(attack.log_loss[-1], "grad_fn", None) is not None)
"""


@pytest.mark.parametrize("returned, kept, printed", [
    ("distance", True, ["Tensor", "True"]),
    ("distance.item()", False, ["float", "False"]),
])
def test_a_closure_a_factory_returns_runs_in_the_step(tmp_path: Path, returned: str, kept: bool,
                                                       printed: list[str]) -> None:
    text = ATTACK.replace("RETURNED", returned)
    found = [(d.code, d.line) for d in check_source(text, "attack.py")]
    assert (("GL008", 24) in found) is kept, found
    assert [f for f in found if f != ("GL008", 24)] == []
    path = tmp_path / "attack.py"
    path.write_text(text)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == printed, run.stderr


def test_a_factory_closure_that_clears_and_backpropagates_is_a_training_step() -> None:
    # the closure clears and backpropagates: the loop trains, and a missing clear would be reported at the step
    text = ATTACK.replace("RETURNED", "distance.item()").replace("            optimizer.zero_grad()\n", "")
    assert ("GL001", 22) in [(d.code, d.line) for d in check_source(text, "attack.py")]
