"""Inlining (gradcheck_lint/analysis/inlining.py): a callee that cannot touch gradients runs on one
stand-in path and is remembered by what it sees; one that does change a path state after all runs on
the caller's paths. Findings must be those of running every callee on every path."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.inlining import Inliner
from support import FIXTURES

HEAD = """\
import torch
from mylib import persist

model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(6)]
"""


def codes(src: str) -> list[str]:
    return [d.code for d in check_source(src)]


def test_an_inert_helper_is_interpreted_once_per_distinct_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loops' fixpoint evaluates `report(...)` again and again with the same values: it runs once
    per distinct input, and the rest are remembered."""
    helper = "def report(epoch, losses):\n" + "".join(f"    v{i} = len(losses) + epoch * {i}\n" for i in range(40)) + "    return v0\n"
    loop = ("\nlosses = []\nfor epoch in range(3):\n    for x, y in loader:\n        opt.zero_grad()\n"
            "        loss = torch.nn.functional.mse_loss(model(x), y)\n        loss.backward()\n        opt.step()\n"
            "        losses.append(loss.item())\n        report(epoch, losses)\n")
    calls, runs = [], []
    inline, run = Inliner.inline, Inliner._run_inlined
    monkeypatch.setattr(Inliner, "inline", lambda self, fn, *a, **k: (calls.append(fn.name), inline(self, fn, *a, **k))[1])
    monkeypatch.setattr(Inliner, "_run_inlined", lambda self, fn, *a, **k: (runs.append(fn.name), run(self, fn, *a, **k))[1])
    assert codes(HEAD + helper + loop) == []
    assert calls.count("report") >= 4
    assert 1 <= runs.count("report") < calls.count("report") / 2


def test_a_helper_that_may_clear_after_all_runs_on_the_callers_paths() -> None:
    """`save_state` touches no gradient by its own names, but hands the optimizer to an unreadable
    function, which may clear it: the stand-in run sees that and the helper runs again for real."""
    body = "\nfor x, y in loader:\n    loss = torch.nn.functional.mse_loss(model(x), y)\n    loss.backward()\n    opt.step()\n    save_state(model, {arg})\n"
    helper = "def save_state(m, o):\n    persist(m, o)\n"
    assert codes(HEAD + helper + body.format(arg="opt")) == []  # `persist` may clear `opt`'s gradients
    assert codes(HEAD + helper + body.format(arg="None")) == ["GL001"]  # nothing can clear them


def test_a_new_leaf_made_by_a_helper_still_starts_without_gradient() -> None:
    src = """\
import torch

def fresh():
    return torch.zeros(3, requires_grad=True)

for _ in range(4):
    x = fresh()
    opt = torch.optim.SGD([x], lr=0.1)
    (x * 2).sum().backward()
    opt.step()
"""
    assert codes(src) == []


FIXTURE_SCRIPTS = sorted(p for p in FIXTURES.rglob("*.py"))


@pytest.mark.parametrize("path", FIXTURE_SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_stand_in_path_changes_no_finding(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fixture gives the same diagnostics when every callee runs on the caller's own paths."""
    src = path.read_text()
    fast = [(d.code, d.span.line, d.message) for d in check_source(src, str(path))]
    monkeypatch.setattr(Inliner, "_inert", lambda self, fn: False)
    slow = [(d.code, d.span.line, d.message) for d in check_source(src, str(path))]
    assert fast == slow
