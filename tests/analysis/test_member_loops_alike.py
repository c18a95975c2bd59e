"""Loops over the same optimizers, one pass each for every member (`Counters.visits_members`): ESPnet's trainer
(vendored in lockbox 18's NMTGMinor, after the opening) unscales, steps and clears in three loops
`for iopt, optimizer in enumerate(optimizers): if optim_idx is not None and iopt != optim_idx: continue`, and its
step loop calls `scaler.step(optimizer); scaler.update()`. The second and third loops rebound `iopt`, so each
forgot what the first had tested of the same member, and a GradScaler's `scaler.step(opt)` with an optimizer list
handed in from out of sight did not read as one member's step: a member stepped and not cleared (GL001 x9), or
unscaled twice (GL007), were read where no path does so."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

TEXT = """\
def train(model, optimizers, loader, scaler, accum_grad, optim_idx):
    for iiter, batch in enumerate(loader, 1):
        loss = model(batch).mean() / accum_grad
        scaler.scale(loss).backward()
        if iiter % accum_grad == 0:
            for iopt, optimizer in enumerate(optimizers):
                if iopt != optim_idx:
                    continue
                scaler.unscale_(optimizer)
            for iopt, optimizer in enumerate(optimizers):
                if iopt != optim_idx:
                    continue
                {step}
            for iopt, optimizer in enumerate(optimizers):
                if {clear_test}:
                    continue
                optimizer.zero_grad(set_to_none=True)
"""

STEP = "scaler.step(optimizer)\n                scaler.update()"


@pytest.mark.parametrize(("clear_test", "expected"), [
    ("iopt != optim_idx", set()),  # the same test of the same member: stepped members are cleared
    ("iopt == optim_idx", {"GL001"}),  # the stepped member is the one never cleared
])
def test_loops_over_the_same_members_share_their_tests(clear_test: str, expected: set[str]) -> None:
    found = {d.code for d in analyse_text(TEXT.format(step=STEP, clear_test=clear_test), "train.py").diagnostics}
    assert found & {"GL001", "GL007"} == expected
