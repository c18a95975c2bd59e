"""`optimizer.step(closure)` returns what the closure returned (torch's `Optimizer.step` does; L-BFGS returns the first
evaluation's): a closure that returns the loss tensor itself hands its graph to the caller, and a list that keeps it
keeps that graph (a gradient-inversion attack's `distance = optimizer.step(closure)`, logged every iteration: lockbox
35's AIJack bug, missed before). A closure returning `.item()` hands back a number."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gradcheck_lint.api import check_source

LOOP = """\
import torch

model = torch.nn.Linear(4, 1)
dummy = torch.randn(8, 4, requires_grad=True)
optimizer = torch.optim.LBFGS([dummy], lr=0.1)
log_loss = []
for it in range(5):
    def closure():
        optimizer.zero_grad()
        distance = (model(dummy) - 1).pow(2).mean()
        distance.backward(retain_graph=True)
        return RETURNED
    distance = optimizer.step(closure)
    log_loss.append(distance)
print(type(log_loss[-1]).__name__, getattr(log_loss[-1], "grad_fn", None) is not None)
"""


def _found(text: str) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in check_source(text, "attack.py")]


def test_the_loss_a_closure_returns_comes_back_from_the_step_with_its_graph(tmp_path: Path) -> None:
    text = LOOP.replace("RETURNED", "distance")
    assert ("GL008", 14) in _found(text)
    path = tmp_path / "attack.py"
    path.write_text(text)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == ["Tensor", "True"], run.stderr  # what the step returned holds the graph


def test_a_closure_that_returns_a_number_hands_back_no_graph(tmp_path: Path) -> None:
    text = LOOP.replace("RETURNED", "distance.item()")
    assert _found(text) == []
    path = tmp_path / "attack.py"
    path.write_text(text)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == ["float", "False"], run.stderr
