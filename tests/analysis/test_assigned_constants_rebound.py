"""A literal a path bound a local to decides a later test of it only until the path binds the name again
(`assigned_constants`): `crit = None; if c: crit = make()` leaves `crit is None` known only on the path that did
not rebind it. The fact used to have no scope, and a binding of a local forgets only the facts of its own
function (`Expressions.forget`): the path that rebound it still knew `crit is None`, so `if crit is None: return`
ended every path and the training below it was never read (every finding there missed)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch


def make():
    return torch.nn.MSELoss()


def train(model, loader, use_loss):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    crit = {start}
    if use_loss:
        crit = {rebound}
    if crit is {start}:
        return
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize("rebound", ["make()", "1", "torch.nn.MSELoss()"])
@pytest.mark.parametrize("start", ["None", "False"])
def test_a_local_rebound_on_one_path_is_not_its_old_literal_there(start: str, rebound: str) -> None:
    report = analyse_text(LOOP.format(start=start, rebound=rebound), "train.py")
    assert [(d.code, d.line, d.possible) for d in report.diagnostics] == [("GL001", 18, False)]


def test_a_local_never_rebound_keeps_its_literal() -> None:
    """Without the rebinding, `crit is None` holds on every path: the function always returns before the loop."""
    text = LOOP.format(start="None", rebound="None").replace("    if use_loss:\n        crit = None\n", "")
    assert analyse_text(text, "train.py").diagnostics == []


def test_the_fact_stays_with_its_own_function() -> None:
    """A callee's local of the same name, bound inside it, does not make the caller forget its own fact."""
    text = LOOP.format(start="None", rebound="None").replace(
        "    if use_loss:\n        crit = None\n", "    helper()\n").replace(
        "def train(", "def helper():\n    crit = make()\n    return crit\n\n\ndef train(")
    assert analyse_text(text, "train.py").diagnostics == []
