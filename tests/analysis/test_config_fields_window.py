"""Two fields of one configuration object are two quantities: a loss weight `params.ctc_loss_scale` is not
the window `params.accum_grad` because both are read from `params` (icefall's SSL fine-tuning scripts,
unseen code: a CTC term weighted by 0.2 was reported as "multiplied by the number of micro-batches"). A term
multiplied by the window field itself, and an undivided loss, are still reported."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Certainty

LOOP = """\
import types

import torch
import torch.nn.functional as F

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
params = types.SimpleNamespace(accum_grad=4, ctc_loss_scale=0.2)
for i, (x, y) in enumerate(zip(torch.randn(16, 2, 4), torch.randn(16, 2, 4))):
    out = model(x)
    loss = F.mse_loss(out, y)
    loss = loss + {term} * F.l1_loss(out, y)
    ({loss}).backward()
    if i % params.accum_grad == params.accum_grad - 1:
        optimizer.step()
        optimizer.zero_grad()
"""


def _gl003(term: str, loss: str) -> list[tuple[int, Certainty, str]]:
    found = check_source(textwrap.dedent(LOOP.format(term=term, loss=loss)), "train.py", settings=Settings.default())
    return [(d.line, d.certainty, d.message) for d in found if d.code == "GL003"]


@pytest.mark.parametrize("term", ["params.ctc_loss_scale", "params.ctc_loss_scale / 2"])
def test_a_loss_weight_beside_the_window_in_one_config_is_no_window_factor(term: str) -> None:
    assert _gl003(term, "loss / params.accum_grad") == []


def test_a_term_multiplied_by_the_window_field_is_still_reported() -> None:
    [(line, certainty, message)] = _gl003("params.accum_grad", "loss / params.accum_grad")
    assert (line, certainty) == (13, Certainty.CERTAIN)
    assert "multiplied by `params.accum_grad`" in message


def test_the_undivided_loss_is_still_reported() -> None:
    assert [(line, c) for line, c, _ in _gl003("params.ctc_loss_scale", "loss")] == [(13, Certainty.CERTAIN)]
