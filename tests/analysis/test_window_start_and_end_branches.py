"""An accumulation loop that clears and back-propagates at the window's start and steps at its end, in an `elif` of
the start's test (SQLova's trainer, copied into many text-to-SQL projects):

    if i % N == 0:            # start: clear, backward (and step when N == 1)
    elif i % N == N - 1:      # end: backward, step
    else:                     # middle: backward

The step sits in the `else` of a test true once per window, but its own `elif` test holds once per window too: it
runs at the window's end, not on N - 1 of every N micro-batches (GL004 said so, certain, on lockbox 28's copy)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

SQLOVA = """\
import torch


def train(loader, model, opt, accumulate_gradients=1):
    for iB, (x, y) in enumerate(loader):
        loss_all = ((model(x) - y) ** 2).mean()
        if iB % accumulate_gradients == 0:
            opt.zero_grad()
            loss_all.backward()
            if accumulate_gradients == 1:
                opt.step()
        elif {end}:
            loss_all.backward()
            opt.step()
        else:
            loss_all.backward()


model = torch.nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters())
train(zip(torch.randn(8, 2, 4), torch.randn(8, 2, 1)), model, opt, accumulate_gradients=4)
"""


@pytest.mark.parametrize("end", ["iB % accumulate_gradients == (accumulate_gradients - 1)",
                                 "(iB + 1) % accumulate_gradients == 0"])
def test_a_step_in_the_elif_of_the_window_end_is_once_per_window(end: str) -> None:
    assert [d.code for d in check_source(SQLOVA.format(end=end)) if d.code == "GL004"] == []


def test_a_step_in_an_elif_that_is_no_window_test_still_runs_on_most_micro_batches() -> None:
    found = check_source(SQLOVA.format(end="loss_all.item() > 0.0"))
    assert [(d.line, d.code) for d in found if d.code == "GL004"] == [(7, "GL004")]
