"""Keyed gradient transitions are computed once per file (gradcheck_lint/analysis/flow.py,
`Flow.map_gradients` with a key): a loop's fixpoint runs its body again over mostly the same paths,
and a backward, step or clear applied to a holding it already met gives what it gave then.
Findings must be those of computing every transition each time."""

from __future__ import annotations

from typing import Any

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis import flow as flow_module
from gradcheck_lint.analysis.flow import Flow
from gradcheck_lint.analysis.gradstate import PathState
from support import FIXTURES

# A GAN trained under an accumulation gate: the clears and steps fire on window boundaries only, so
# the loop's fixpoint takes several turns and meets the same gradient holdings on each.
GATED_GAN = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=4)
netG = torch.nn.Linear(4, 4)
netD = torch.nn.Linear(4, 1)
opt_G = torch.optim.Adam(netG.parameters())
opt_D = torch.optim.Adam(netD.parameters())
netG, netD, opt_G, opt_D = accelerator.prepare(netG, netD, opt_G, opt_D)
loader = [torch.randn(2, 4) for _ in range(8)]

for epoch in range(3):
    for step, x in enumerate(loader):
        with accelerator.accumulate(netG, netD):
            fake = netG(x)
            g_loss = -netD(fake).mean()
            accelerator.backward(g_loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(netG.parameters(), 1.0)
            opt_G.step()
            opt_G.zero_grad()
            d_loss = netD(fake).mean() - netD(x).mean()
            accelerator.backward(d_loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(netD.parameters(), 1.0)
            opt_D.step()
            opt_D.zero_grad()
"""

_keyed = Flow.map_gradients


def _unkeyed(self: Flow, fn, key=None) -> None:  # type: ignore[no-untyped-def]
    _keyed(self, fn, None)


def _report(text: str, path: str = "<string>") -> list[tuple[str, int, str, str]]:
    return [(d.code, d.line, d.certainty.value, d.message) for d in check_source(text, path)]


def _transitions_computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    for name in ("backward", "step", "clear"):
        original = getattr(PathState, name)

        def spy(self, *args, _original=original, _name=name, **kwargs):  # type: ignore[no-untyped-def]
            calls.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(PathState, name, spy)
    return calls


def test_a_gated_loop_computes_fewer_transitions_and_finds_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        calls = _transitions_computed(m)
        remembered = _report(GATED_GAN)
        with_memo = len(calls)
    with monkeypatch.context() as m:
        m.setattr(Flow, "map_gradients", _unkeyed)
        calls = _transitions_computed(m)
        every_time = _report(GATED_GAN)
        without_memo = len(calls)
    assert remembered == every_time
    assert with_memo < without_memo


def test_the_table_is_emptied_after_each_file() -> None:
    """Event ids and holders are ordinals of one file's analysis: another file's must never be reused."""
    check_source(GATED_GAN)
    assert not flow_module._TRANSITION_RESULTS


@pytest.mark.slow  # every fixture, twice
def test_fixture_findings_are_those_of_computing_every_transition(
    monkeypatch: pytest.MonkeyPatch, default_diagnostics: dict[str, tuple[Any, ...]]
) -> None:
    """Every fixture: the same diagnostics (code, line, certainty, message) with the memo and without it."""
    paths = sorted(FIXTURES.glob("*/*.py"))
    assert len(paths) > 50

    def report() -> list[tuple[str, str, int, str, str]]:
        out = []
        for path in paths:
            out += [(path.name, *d) for d in _report(path.read_text(encoding="utf-8"), str(path))]
        return out

    # the default analysis (the memo on), made once for the session (conftest.py)
    remembered = [(path.name, d.code, d.line, d.certainty.value, d.message)
                  for path in paths for d in default_diagnostics[str(path)]]
    monkeypatch.setattr(Flow, "map_gradients", _unkeyed)
    assert report() == remembered
