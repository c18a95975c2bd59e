"""A callee that trains runs once per distinct input (gradcheck_lint/analysis/inlining.py,
`Inliner._run_remembered`): a loop's fixpoint calls it again with the same values and path states.
Findings must be those of running it every time."""

from __future__ import annotations

from typing import Any

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.inlining import Inliner
from support import FIXTURES

NESTED = """\
import torch

model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(6)]


def train_epoch(scale):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y) * scale
        loss.backward()
        opt.step()


def main():
    for split in [True, False]:
        for dispatch in [True, False]:
            for sync in [True, False]:
                train_epoch(1.0)


main()
"""


def _every_time(self, key, fn, cls, self_value, pos, kw, flow, frame, instance_key, closure=None,  # type: ignore[no-untyped-def]
                captured=None):
    return self._run_inlined(fn, cls, self_value, pos, kw, flow, frame, instance_key, closure=closure, captured=captured)


def test_a_trainer_called_in_nested_loops_runs_once_per_distinct_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three nested loops over literal flags: the fixpoints call `train_epoch(1.0)` 8 times, on 2
    distinct inputs (the first pass, then the paths it leaves)."""
    runs: list[str] = []
    original = Inliner._run_inlined

    def spy(self, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        if fn.name == "train_epoch":
            runs.append(fn.name)
        return original(self, fn, *args, **kwargs)

    monkeypatch.setattr(Inliner, "_run_inlined", spy)
    assert [(d.code, d.line) for d in check_source(NESTED)] == [("GL001", 12)]
    assert len(runs) == 2


@pytest.mark.slow  # every fixture, twice
def test_fixture_findings_are_those_of_running_every_call(
    monkeypatch: pytest.MonkeyPatch, default_diagnostics: dict[str, tuple[Any, ...]]
) -> None:
    """Every fixture: the same diagnostics (code, line, certainty, message) with the memo and without it."""
    paths = sorted(FIXTURES.glob("*/*.py"))
    assert len(paths) > 50

    def report() -> list[tuple[str, str, int, str, str]]:
        out = []
        for path in paths:
            text = path.read_text(encoding="utf-8")
            out += [(path.name, d.code, d.line, d.certainty.value, d.message) for d in check_source(text, str(path))]
        return out

    # the default analysis (the memo on), made once for the session (conftest.py)
    remembered = [(path.name, d.code, d.line, d.certainty.value, d.message)
                  for path in paths for d in default_diagnostics[str(path)]]
    monkeypatch.setattr(Inliner, "_run_remembered", _every_time)
    assert report() == remembered
