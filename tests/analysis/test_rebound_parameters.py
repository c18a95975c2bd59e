"""A parameter bound again at the top of a function is a local of that call (speedyspeech's `expand_enc(self,
encodings, durations)`: `encodings = self.pad(...)`, then `encodings += pe`, returned into this iteration's forward):
summing into it keeps nothing across the loop that calls the function (a certain GL008 before, lockbox 13 after
its opening). A parameter summed into without being bound again is the caller's object, as before."""

from __future__ import annotations

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

PROGRAM = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.out = nn.Linear(4, 1)

    def expand(self, encodings, extra):
        {rebind}
        encodings += extra
        return encodings

    def forward(self, x):
        return self.out(self.expand(self.fc(x), torch.ones(4)))


def fit(total):
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in [(torch.randn(2, 4), torch.randn(2, 1))] * 3:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        model.expand(total, loss)
    return total
"""


def _found(text: str) -> set[tuple[int, str]]:
    report = analyse_text(text, "t.py", Settings.default().with_enabled(frozenset({"GL008"})))
    return {(d.line, d.code) for d in report.diagnostics}


@pytest.mark.parametrize("rebind", ["encodings = torch.nn.functional.pad(encodings, (0, 0))", "encodings = encodings * 1"])
def test_a_parameter_bound_again_first_is_a_local(rebind: str) -> None:
    assert _found(PROGRAM.format(rebind=rebind)) == set()


def test_a_parameter_summed_into_as_handed_in_is_the_callers() -> None:
    assert _found(PROGRAM.format(rebind="pass")) == {(13, "GL008")}
