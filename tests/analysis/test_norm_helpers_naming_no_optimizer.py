"""A gradient norm read by a helper that names no optimizer (`get_total_grad_norm(model.parameters())` of a utils
module) reads still-scaled gradients when it runs between `scaler.scale(loss).backward()` and `scaler.unscale_`.
The owner of the gradients was looked for among the optimizers the helper can name, none, so the read was not
recorded (GL007 missed; lockbox 15's YOLO tutorial, development material now). The optimizer whose gradients every
path holds scaled is the owner, when it is the only one that may update them. After `unscale_`, silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree

HELPER = """\
import torch


def get_total_grad_norm(parameters, norm_type=2):
    parameters = [p for p in parameters if p.grad is not None]
    return torch.norm(torch.stack([torch.norm(p.grad.detach(), norm_type) for p in parameters]), norm_type)
"""

LOOP = """\
import torch
from misc import get_total_grad_norm


def train_one_epoch(model, criterion, loader, optimizer, scaler, max_norm=10.0):
    model.train()
    for images, targets in loader:
        with torch.autocast("cuda"):
            loss = criterion(model(images), targets)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
{before}        scaler.unscale_(optimizer)
{after}        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
"""

_READ = "        gnorm = get_total_grad_norm(model.parameters())\n"


@pytest.mark.parametrize("where, expected", [("before", {"GL007"}), ("after", set())])
def test_a_norm_read_in_a_helper_of_another_file(tmp_path: Path, where: str, expected: set[str]) -> None:
    loop = LOOP.replace("{before}", _READ if where == "before" else "").replace("{after}", _READ if where == "after" else "")
    root = project_tree(tmp_path, {"misc.py": HELPER, "train.py": loop})
    path = root / "train.py"
    report = analyse_text(path.read_text(), str(path), Settings.default().with_enabled(frozenset({"GL007"})))
    assert {d.code for d in report.diagnostics} == expected
    if expected:
        assert report.diagnostics[0].line == 12  # the helper's call in the loop, naming the helper's line
        assert "misc.py:6" in report.diagnostics[0].message


@pytest.mark.parametrize("where, expected", [("before", {"GL007"}), ("after", set())])
def test_a_norm_read_in_a_helper_of_the_same_file(where: str, expected: set[str]) -> None:
    loop = LOOP.replace("from misc import get_total_grad_norm\n", HELPER.replace("import torch\n", ""))
    text = loop.replace("{before}", _READ if where == "before" else "").replace("{after}", _READ if where == "after" else "")
    report = analyse_text(text, "train.py", Settings.default().with_enabled(frozenset({"GL007"})))
    assert {d.code for d in report.diagnostics} == expected
