"""When the work budget runs out in a module's top-level code, part-way through its training loop, what that code
recorded may stand on paths the loop's later iterations would have joined: its findings are dropped, as those of a
function the budget cut short (FabianMenekshi's 1,300-line scripts, lockbox 40: a GL008 on a dict the model's forward
makes afresh at each call, a GL001 on a step whose clear a completed pass runs). The notice says so."""

from __future__ import annotations

import pytest

from gradcheck_lint.analysis import interpreter
from gradcheck_lint.analysis.flow import BudgetExhausted
from gradcheck_lint.api import check_source

TEXT = """\
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 2, 4):
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""


def _found() -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in check_source(TEXT, "t.py")]


def test_a_complete_analysis_reports_the_top_level_loop() -> None:
    assert _found() == [("GL001", 8)]


def test_findings_of_top_level_code_the_budget_cut_short_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    exec_block = interpreter.Interpreter.exec_block

    def cut(self, body, flow, frame):  # type: ignore[no-untyped-def]
        out = exec_block(self, body, flow, frame)
        if body is self.module.body:
            raise BudgetExhausted  # as if the budget ran out right after the top-level loop's passes
        return out

    monkeypatch.setattr(interpreter.Interpreter, "exec_block", cut)
    found = check_source(TEXT, "t.py")
    assert [(d.code, d.line) for d in found] == [("GL099", 1)]
    assert "in the module's top-level code, whose findings are left out" in found[0].message
