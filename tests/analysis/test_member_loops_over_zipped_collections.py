"""A loop over `enumerate(zip(optimizers, schedulers))` after loops over `enumerate(optimizers)` visits the same
members (`Counters._binds_again`): its skip test (`if optim_idx is not None and iopt != optim_idx: continue`) is
the earlier loops' test of the same member. ESPnet's trainers unscale in one loop and step (with
`scaler.update()`) in the zipped one; read apart, a path unscaled a member and skipped its step, and the next
window's `unscale_` was a certain "second time" GL007 (six false alarms in NMTGMinor's vendored copy, lockbox 18).
A step skipped without `scaler.update()` (LVSM's bug) is still reported there."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

TEXT = """\
import torch


def train_one_epoch(model, iterator, optimizers, schedulers, scaler, accum_grad):
    for iiter, batch in enumerate(iterator, 1):
        retval = model(**batch)
        loss = retval["loss"] / accum_grad
        optim_idx = retval.get("optim_idx")
        ok = retval.get("ok")
        scaler.scale(loss).backward()
        if iiter % accum_grad == 0:
            for iopt, optimizer in enumerate(optimizers):
                if optim_idx is not None and iopt != optim_idx:
                    continue
                scaler.unscale_(optimizer)
            for iopt, (optimizer, scheduler) in enumerate(zip(optimizers, schedulers)):
                if optim_idx is not None and iopt != optim_idx:
                    continue
                {step}
                scheduler.step()
            for iopt, optimizer in enumerate(optimizers):
                if optim_idx is not None and iopt != optim_idx:
                    continue
                optimizer.zero_grad()
"""

STEP = "scaler.step(optimizer)\n                scaler.update()"
SKIPPED = "if ok:\n                    scaler.step(optimizer)\n                    scaler.update()"


@pytest.mark.parametrize(("step", "twice"), [(STEP, False), (SKIPPED, True)])
def test_unscale_in_a_member_loop_beside_a_zipped_step_loop(step: str, twice: bool) -> None:
    found = [d for d in analyse_text(TEXT.format(step=step), "train.py").diagnostics
             if d.code == "GL007" and "second time" in d.message]
    assert [d.line for d in found] == ([15] if twice else [])  # `scaler.unscale_(optimizer)`
