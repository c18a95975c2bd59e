"""GL003 rests on the loss being a mean over its samples (a sum over the window's samples is not to be divided).
A loss made by a call the analysis cannot read (a library function out of the catalogue, or a function of the
project left unread past the reading budgets) may be either: YOLOv5's `ComputeLoss` returns its mean times the batch
size, a sum, and its training loop accumulates `nbs / batch_size` batches undivided on purpose. Read through the
script's `main()`, the budgets left `ComputeLoss.__call__` unread, and GL003 was certain (lockbox 37's three YOLO
copies, kind 3). A loss made by a modelled function, or by code read, stays certain."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.engine import analyse_text
from gradcheck_lint.project import context
from support import project_tree

LOOP = """\
import torch
import torch.nn.functional as F
{imports}


def train(model, loader, accumulate):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (x, y) in enumerate(loader):
        loss = {loss}
        loss.backward()
        if (i + 1) % accumulate == 0:
            opt.step()
            opt.zero_grad()
"""
HELPER = """\
def my_loss(pred, y):
    return ((pred - y) ** 2).mean()
"""


def _found(text: str, path: str = "train.py") -> list[tuple[str, int, bool]]:
    return [(d.code, d.line, d.possible) for d in analyse_text(text, path).diagnostics]


def _backward_line(text: str) -> int:
    return text.splitlines().index("        loss.backward()") + 1


@pytest.mark.parametrize(("imports", "loss", "possible"), [
    ("", "F.mse_loss(model(x), y)", False),  # modelled: a mean
    ("from somelib import yolo_loss", "yolo_loss(model(x), y)", True),  # out of sight: mean or sum unknown
    ("import somelib", "somelib.losses.compute(model(x), y)[0]", True),
    ("\n\n" + HELPER, "my_loss(model(x), y)", False),  # read in this file
])
def test_the_reduction_of_a_loss_made_out_of_sight_is_assumed(imports: str, loss: str, possible: bool) -> None:
    text = LOOP.format(imports=imports, loss=loss)
    assert _found(text) == [("GL003", _backward_line(text), possible)]


def test_a_loss_helper_of_the_project_left_unread_past_the_budget_is_assumed(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    root = project_tree(tmp_path / "p", {"losses.py": HELPER, "train.py": LOOP.format(
        imports="from losses import my_loss", loss="my_loss(model(x), y)")})
    path = root / "train.py"
    line = _backward_line(path.read_text())
    assert _found(path.read_text(), str(path)) == [("GL003", line, False)]  # read: a mean
    monkeypatch.setattr(context, "FOREIGN_WORK_CAP", -1)  # nothing of another file is read
    assert _found(path.read_text(), str(path)) == [("GL003", line, True)]
