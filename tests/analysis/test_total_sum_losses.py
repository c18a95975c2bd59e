"""A loss summed by hand over every element (`torch.sum(-torch.log(probs) * labels)`) is the micro-batch's loss, not
a sum over samples: whether it sums samples depends on how many the micro-batch holds. HybridQA's and OTT-QA's
retrievers load one question per micro-batch (`DataLoader(batch_size=None)`) and sum over its candidates against a
normalised label distribution, a per-sample loss: their unscaled accumulation is a true GL003 (a lead's verdict on
lockbox 36 that read it as a sum over samples was wrong, and a change made on it was undone). `reduction="sum"`
says so in the call, and is not reported."""

from __future__ import annotations

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch
from torch.utils.data import DataLoader


def train(model, optimizer, dataset, accumulation_steps):
    loader = DataLoader(dataset, batch_size=None)
    optimizer.zero_grad()
    for step, (x, labels) in enumerate(loader):
        probs = model(x)
        loss = {loss}
        loss.backward()
        if (step + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def _found(loss: str) -> set[tuple[int, str]]:
    report = analyse_text(LOOP.format(loss=loss), "t.py", Settings.default().with_enabled(frozenset({"GL003"})))
    return {(d.line, d.code) for d in report.diagnostics}


@pytest.mark.parametrize("loss", ["torch.sum(-torch.log(probs + 1e-8) * labels)",
                                  "(-torch.log(probs + 1e-8) * labels).sum(dim=1).mean()",
                                  "torch.nn.functional.mse_loss(probs, labels)"])
def test_a_loss_summed_by_hand_is_the_micro_batchs_loss(loss: str) -> None:
    assert _found(loss) == {(11, "GL003")}


def test_a_loss_the_call_says_is_summed_over_samples_is_not_reported() -> None:
    assert _found("torch.nn.functional.mse_loss(probs, labels, reduction='sum')") == set()
