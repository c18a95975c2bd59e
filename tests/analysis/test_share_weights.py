"""A loss weighted by a share, `loss * (n / total)`: each micro-batch's mean is multiplied by its part `n`
of a count `total`, so the window's weights add up to one when `total` counts the window (MACE's full-loader
closure for L-BFGS, tab-ddpm's chunked batches). The share's denominator is a divisor whatever its name
(`total_sample_count`, `batch_size` read as per-sample counts before: GL003 false alarms, `certain` on
MACE); a share of the micro-batch's own count is still each micro-batch's mean, and an undivided mean loss
is still reported, `certain`."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Certainty

# MACE's `take_step_lbfgs` (unseen code): the count is summed over the loader in the enclosing function, the
# closure backpropagates every batch of the loader into one step.
LOADER = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.1)
loader = [torch.randn(3, 4), torch.randn(5, 4), torch.randn(2, 4)]


def take_step():
    total_sample_count = 0
    for batch in loader:
        total_sample_count += batch.shape[0]

    def closure():
        optimizer.zero_grad()
        for batch in loader:
            n_rows = batch.shape[0]
            batch_loss = model(batch).pow(2).mean()
            {weigh}
            batch_loss.backward()
        return batch_loss

    return optimizer.step(closure)


take_step()
"""

# tab-ddpm's `train_with_auto_virtual_batch` (unseen code): a batch split into chunks by a helper out of
# sight, each chunk's loss (from a loss function handed in) weighted by its share of the batch; here the
# count is handed in too, so nothing says what it counts but the share.
CHUNKS = """\
import torch
import mylib


def train_step(model, optimizer, loss_fn, batch, chunk_size, n_samples):
    optimizer.zero_grad()
    for chunk in mylib.iter_batches(batch, chunk_size):
        chunk_loss = loss_fn(model(chunk), chunk)
        {weigh}
        chunk_loss.backward()
    optimizer.step()
"""


def _gl003(text: str) -> list[tuple[int, Certainty]]:
    found = check_source(textwrap.dedent(text), "train.py", settings=Settings.default())
    return [(d.line, d.certainty) for d in found if d.code == "GL003"]


@pytest.mark.parametrize("weigh", [
    "batch_loss = batch_loss * (batch.shape[0] / total_sample_count)",
    "batch_loss = batch_loss * batch.shape[0] / total_sample_count",
    "batch_loss = (batch.shape[0] / total_sample_count) * batch_loss",
    "batch_loss *= batch.shape[0] / total_sample_count",
])
def test_a_share_of_a_count_over_the_loader_scales_each_loss(weigh: str) -> None:
    assert _gl003(LOADER.format(weigh=weigh)) == []


@pytest.mark.parametrize("weigh", [
    "pass",  # the undivided mean
    "batch_loss = batch_loss * (batch.shape[0] / n_rows)",  # a share of the micro-batch's own count: its mean
])
def test_each_micro_batch_s_mean_undivided_is_still_certain(weigh: str) -> None:
    assert _gl003(LOADER.format(weigh=weigh)) == [(19, Certainty.CERTAIN)]


@pytest.mark.parametrize("weigh", [
    "chunk_loss = chunk_loss * (len(chunk) / n_samples)",
    "chunk_loss = chunk_loss * len(chunk) / n_samples",
    "chunk_loss *= len(chunk) / n_samples",
])
def test_a_share_of_the_batch_scales_a_loss_from_a_function_handed_in(weigh: str) -> None:
    assert _gl003(CHUNKS.format(weigh=weigh)) == []


@pytest.mark.parametrize("weigh", [
    "pass",
    "chunk_loss = chunk_loss / n_samples",  # a per-sample normalisation, not a share: no weight on top
    "chunk_loss = chunk_loss * 2 / n_samples",  # a number times a normalisation
])
def test_a_normalisation_that_is_no_share_is_still_reported(weigh: str) -> None:
    assert [line for line, _ in _gl003(CHUNKS.format(weigh=weigh))] == [10]
