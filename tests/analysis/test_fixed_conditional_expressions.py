"""A conditional expression whose test is decided takes one arm (`Expressions._arms`): icefall's HuBERT
`compute_loss` sets `reduce = True` and logs `"loss": loss.item() if reduce else loss`; the graph of the other
arm, which never runs, was kept in the log (peacock-asr in lockbox 18, after its opening). Before, only an
expression whose arms touch gradients was decided so."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

TEXT = """\
import torch


def compute(model, x):
    reduce = {reduce}
    loss = model(x).mean()
    info = {{"loss": loss.item() if reduce else loss}}
    return loss, info


def train(model, loader):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for x in loader:
        loss, info = compute(model, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(info["loss"])
"""


@pytest.mark.parametrize(("reduce", "gl008"), [("True", False), ("False", True)])
def test_logged_arm_of_a_decided_test(reduce: str, gl008: bool) -> None:
    found = {d.code for d in analyse_text(TEXT.format(reduce=reduce), "train.py").diagnostics}
    assert ("GL008" in found) is gl008
