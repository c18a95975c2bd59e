"""A helper called with a literal argument takes, on that call, the branch its test of that argument
fixes (`analysis/fixed_tests.py`): `if mode == 1:` in `update(x, mode=1)` always runs. Reading both arms
there gave a certain GL001, with a safe fix, on a loop that clears every step."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

SRC = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def update(x, mode):
    if {test}:
        opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()

for x in torch.randn(8, 2, 4):
    update(x, {arg})
"""


def codes(test: str, arg: str) -> list[str]:
    return [d.code for d in analyse_text(SRC.format(test=test, arg=arg), "train.py").diagnostics]


@pytest.mark.parametrize("test, arg", [("mode == 1", "1"), ("mode == 1", "mode=1"), ("1 == mode", "1"),
                                       ("mode != 0", "1")])
def test_a_literal_argument_fixes_the_branch_that_clears(test: str, arg: str) -> None:
    assert codes(test, arg) == []


@pytest.mark.parametrize("test, arg", [("mode == 1", "0"), ("mode != 0", "0")])
def test_a_literal_argument_fixes_the_branch_that_does_not_clear(test: str, arg: str) -> None:
    assert codes(test, arg) == ["GL001"]


def test_an_argument_the_analysis_cannot_read_leaves_both_branches() -> None:
    assert codes("mode == 1", "int(x.sum() > 0)") == ["GL001"]  # on the paths where it is 0
