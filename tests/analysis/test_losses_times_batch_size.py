"""A batch's mean loss multiplied by the batch's sample count (`(lbox + lobj + lcls) * bs` of `bs = tobj.shape[0]`,
the YOLOv5 family's `ComputeLoss.__call__`) is a sum over the samples: micro-batches accumulated undivided add up to
the window's sum, as a loss of `reduction="sum"` does, and GL003 holds no finding. A multiplier that is not the
sample count (a weight, the world size) leaves the mean a mean."""

from __future__ import annotations

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch
from torch import nn


class ComputeLoss:
    def __init__(self, model):
        self.bce = nn.BCEWithLogitsLoss()

    def __call__(self, p, targets):
        lbox = torch.zeros(1)
        lobj = self.bce(p, targets)
        {count}
        return (lbox + lobj) * {factor}, torch.cat((lbox, lobj.view(1))).detach()


def train(model, loader, accumulate, weight):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    compute_loss = ComputeLoss(model)
    last_opt_step = -1
    for i, (imgs, targets) in enumerate(loader):
        loss, loss_items = compute_loss(model(imgs), targets)
        loss.backward()
        if i - last_opt_step >= accumulate:
            optimizer.step()
            optimizer.zero_grad()
            last_opt_step = i
"""


def _found(count: str, factor: str) -> list[tuple[int, str]]:
    report = analyse_text(LOOP.format(count=count, factor=factor), "t.py",
                          Settings.default().with_enabled(frozenset({"GL003"})))
    return [(d.line, d.code) for d in report.diagnostics]


@pytest.mark.parametrize(("count", "factor"), [("bs = p.shape[0]", "bs"), ("pass", "p.shape[0]"), ("pass", "p.size(0)"),
                                               ("n = len(targets)", "n")])
def test_a_mean_times_the_sample_count_is_a_sum(count: str, factor: str) -> None:
    assert _found(count, factor) == []


@pytest.mark.parametrize(("count", "factor"), [("pass", "weight"), ("bs = p.shape[1]", "bs"),
                                               ("bs = p.shape[0]\n        bs = 4", "bs")])
def test_another_factor_leaves_a_mean(count: str, factor: str) -> None:
    assert [code for _line, code in _found(count, factor)] == ["GL003"]
