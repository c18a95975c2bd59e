"""A loss reduced by a sum over every element (`torch.sum(-torch.log(probs) * labels)`, `((pred - y) ** 2).sum()`)
sums over the samples too: micro-batches accumulated without a division give the window's sum, as a loss of
`reduction="sum"` does, and GL003 holds no finding (OTT-QA's retriever, lockbox 36). A sum over one dimension,
or a sum divided by a count (a mean written by hand), is still a mean over the samples."""

from __future__ import annotations

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch


def train(model, optimizer, loader, accumulation_steps):
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


@pytest.mark.parametrize("loss", ["torch.sum(-torch.log(probs + 1e-8) * labels)", "((probs - labels) ** 2).sum()",
                                  "torch.nn.functional.mse_loss(probs, labels, reduction='sum')"])
def test_a_loss_summed_over_every_element_accumulates_as_a_sum(loss: str) -> None:
    assert _found(loss) == set()


@pytest.mark.parametrize("loss", ["torch.sum(-torch.log(probs + 1e-8) * labels) / x.shape[0]",
                                  "(-torch.log(probs + 1e-8) * labels).sum(dim=1).mean()",
                                  "torch.sum(-torch.log(probs) * labels, 1).mean()",
                                  "torch.nn.functional.mse_loss(probs, labels)"])
def test_a_mean_over_samples_is_still_reported(loss: str) -> None:
    assert _found(loss) == {(9, "GL003")}


def test_a_sum_of_stacked_losses_adds_terms_not_samples() -> None:
    # per-step losses of one episode stacked and summed: the terms of one sample's objective, not a sum over a batch
    text = LOOP.format(loss="torch.stack([torch.nn.functional.mse_loss(p, labels) for p in probs]).sum()")
    report = analyse_text(text, "t.py", Settings.default().with_enabled(frozenset({"GL003"})))
    assert [(d.line, d.code) for d in report.diagnostics] == [(9, "GL003")]
