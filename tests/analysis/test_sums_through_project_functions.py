"""A loss module whose `forward` returns what a function of the project returns (`return LF.contrastive_loss(x,
label)`, cirtorch's), and that function returns a total sum (`y = torch.sum(y); return y`): the loss is summed
over its samples, so an accumulation window of it needs no division (Landmark2019's `update_every`, a false
certain GL003 with a safe fix of lockbox 17). A forward that returns a mean through such a function, or a count
beside its loss, is no sum."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.engine import analyse_text
from support import project_tree

FUNCTIONAL = """
import torch


def contrastive_loss(x, label, margin=0.7):
    dist = (x[:, ::2] - x[:, 1::2]).pow(2).sum(dim=0).sqrt()
    y = 0.5 * label * dist.pow(2) + 0.5 * (1 - label) * torch.clamp(margin - dist, min=0).pow(2)
    y = torch.sum(y)
    return y
"""

LOSS = """
from torch import nn

import mylib.functional as LF


class ContrastiveLoss(nn.Module):
    def __init__(self, margin=0.7):
        super().__init__()
        self.margin = margin

    def forward(self, x, label):
        return LF.contrastive_loss(x, label, margin=self.margin)
"""

TRAIN = """
import torch

from mylib.loss import ContrastiveLoss

model = torch.nn.Linear(8, 8)
optimizer = torch.optim.Adam(model.parameters())
criterion = ContrastiveLoss(margin=0.7)
update_every = 4
for i in range(100):
    x, label = torch.randn(4, 8), torch.randint(0, 2, (4,)).float()
    loss = criterion(model(x).t(), label)
    loss.backward()
    if (i + 1) % update_every == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def gl003(tmp_path: Path, functional: str) -> list[int]:
    root = project_tree(tmp_path, {"mylib/__init__.py": "", "mylib/functional.py": functional, "mylib/loss.py": LOSS,
                                   "train.py": TRAIN})
    path = root / "train.py"
    return [d.span.line for d in analyse_text(path.read_text(), str(path)).diagnostics if d.code == "GL003"]


def test_a_sum_returned_by_a_function_of_another_file_needs_no_division(tmp_path: Path) -> None:
    assert gl003(tmp_path, FUNCTIONAL) == []


def test_a_mean_returned_by_that_function_is_still_undivided(tmp_path: Path) -> None:
    assert gl003(tmp_path, FUNCTIONAL.replace("y = torch.sum(y)", "y = torch.mean(y)")) == [13]


def test_a_sum_over_one_dimension_then_a_mean_is_a_mean(tmp_path: Path) -> None:
    assert gl003(tmp_path, FUNCTIONAL.replace("y = torch.sum(y)", "y = y.sum(dim=0).mean()")) == [13]


def test_a_sum_of_terms_divided_by_their_counts_is_a_weighted_mean(tmp_path: Path) -> None:
    """kaggle-cloud-organization's `WeightedBCE`: `(w1 * pos * loss / pos_sum + w0 * neg * loss / neg_sum).sum()`."""
    weighted = FUNCTIONAL.replace("y = torch.sum(y)", "y = (y * (label > 0.5) / label.sum() + y * (label < 0.5) / (1 - label).sum()).sum()")
    assert gl003(tmp_path, weighted) == [13]
