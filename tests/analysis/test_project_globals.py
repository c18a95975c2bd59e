"""A name another file of the project binds once in its top-level code is that file's object, read before any
name heuristic (`ProjectView.global_value`).

cyclegan-monet's trainer (a lockbox-13 miss) computes its losses with `config.MSELoss(...)` and `config.L1Loss(...)`,
instances made in `config.py`; read by the name rule as *building* loss modules, the losses were no tensors, and
the lists keeping their graphs were not reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree

CONFIG = """\
import torch.nn as nn

MSELoss = nn.MSELoss()
L1Loss = nn.L1Loss()
"""
TRAIN = """\
import torch
{imports}


def train(model, loader):
    opt = torch.optim.Adam(model.parameters())
    scaler = torch.cuda.amp.GradScaler()
    total = 0
    for x, y in loader:
        opt.zero_grad()
        loss = {prefix}MSELoss(model(x), y) + {prefix}L1Loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        total += loss
    print(total)
"""


def _codes(path: Path) -> list[tuple[int, str]]:
    report = analyse_text(path.read_text(), str(path), Settings.default())
    return [(d.line, d.code) for d in report.diagnostics]


@pytest.mark.parametrize("imports, prefix", [("import config", "config."), ("from config import MSELoss, L1Loss", "")])
def test_a_loss_object_made_in_another_file_computes_a_loss(tmp_path: Path, imports: str, prefix: str) -> None:
    root = project_tree(tmp_path, {"config.py": CONFIG, "train.py": TRAIN.format(imports=imports, prefix=prefix)})
    assert _codes(root / "train.py") == [(15, "GL008")]


PLACEHOLDER = """\
import torch.nn as nn

MSELoss = None
L1Loss = nn.L1Loss()


def setup():
    global MSELoss
    MSELoss = nn.MSELoss()
"""


def test_a_placeholder_another_function_fills_is_not_taken_for_the_object(tmp_path: Path) -> None:
    # `MSELoss = None` filled by `setup()` through `global`: not read as None (a call of None computes nothing);
    # the name is read as before, by how it is used
    root = project_tree(tmp_path, {"config.py": PLACEHOLDER,
                                   "train.py": TRAIN.format(imports="import config", prefix="config.")})
    found = _codes(root / "train.py")
    assert all(code == "GL008" for _line, code in found)
