"""A loop that calls a function of the module is taken to be able to backpropagate (and so to move an accumulation
window, forgetting what its paths assumed of the window's gate) only when that function can: its text names a
backward, or it calls a function or `self` method that can. atlas's fine-tuning (real-bug benchmark, GL003) sets the
learning rate inside its window gate through a scheduler whose loop over the optimizer's groups calls
`assign_learning_rate(param_group, lr)`: that call made the gate's test forgotten, so the step was no longer seen as
gated and the undivided accumulation went unreported."""

from __future__ import annotations

import pytest

from gradcheck_lint.api import check_source

SCRIPT = """\
import torch


def assign_learning_rate(param_group, new_lr):
    HELPER


def adjust(optimizer, base_lr, steps, step):
    for param_group in optimizer.param_groups:
        lr = 0.5 * (1 + step / steps) * base_lr
        assign_learning_rate(param_group, lr)


def main(args, loader):
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if (i + 1) % args.num_grad_accumulation == 0:
            adjust(optimizer, args.lr, 100, i)
            optimizer.step()
            optimizer.zero_grad()
"""


@pytest.mark.parametrize("helper", ['param_group["lr"] = new_lr', "pass", 'print(param_group["lr"], new_lr)'])
def test_a_learning_rate_helper_in_the_gate_keeps_the_window(helper: str) -> None:
    found = [(d.code, d.line) for d in check_source(SCRIPT.replace("HELPER", helper), "train.py")]
    assert ("GL003", 19) in found, found


def test_the_divided_loss_stays_silent() -> None:
    text = SCRIPT.replace("HELPER", 'param_group["lr"] = new_lr').replace(
        "mse_loss(model(x), y)", "mse_loss(model(x), y) / args.num_grad_accumulation")
    assert [d.code for d in check_source(text, "train.py")] == []
