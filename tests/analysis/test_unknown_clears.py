"""A `zero_grad()` on an object the analysis could not make out is a clear of parameters not known, not a
call of nothing: `m = torch.load(path)` (a whole pickled model) trained with `opt = Adam(m.parameters())`
and cleared by `m.zero_grad()` before each backward. Read as nothing, the clear was dropped and a certain
GL001 with a safe fix followed. The same loop without the clear is still reported."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


LOOP = """\
import torch


def train(path, loader):
    m = MAKE
    opt = torch.optim.Adam(m.parameters(), 1e-3)
    for x in loader:
        loss = m(x).sum()
        CLEAR
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize("make", ["torch.load(path)", "torch.jit.load(path)"])
def test_a_clear_of_an_object_not_made_out_clears(make: str) -> None:
    text = LOOP.replace("MAKE", make)
    assert found(text.replace("CLEAR", "m.zero_grad()")) == []
    assert found(text.replace("        CLEAR\n", "")) == [("GL001", 10, "certain")]
