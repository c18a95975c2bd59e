"""A GradScaler forgets an `unscale_` only in `update()`: an `unscale_` after a step that was skipped
without an update raises (LVSM, lockbox 3). An update every iteration, or a step whose failure only an
exception handler sees (TabPFN's `try: scaler.step(...); scaler.update() except: print(...)`), or a scaler
handed to a function the analysis cannot read (which may update it), is silent."""

from __future__ import annotations

from gradcheck_lint import check_source

LOOP = """\
import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters())
scaler = torch.amp.GradScaler("cuda")

for x in batches:
    loss = model(x).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0).item()
    {step}
    optimizer.zero_grad(set_to_none=True)
"""


def _found(step: str) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in check_source(LOOP.format(step=step), "train.py")]


def test_an_unscale_after_a_step_skipped_without_update_is_gl007() -> None:
    assert _found("if norm <= 5.0:\n        scaler.step(optimizer)\n        scaler.update()") == [("GL007", 11)]


def test_an_update_on_every_iteration_is_silent() -> None:
    assert _found("if norm <= 5.0:\n        scaler.step(optimizer)\n    scaler.update()") == []
    assert _found("scaler.step(optimizer)\n    scaler.update()") == []


def test_a_step_that_fails_into_an_exception_handler_is_silent() -> None:
    step = "try:\n        scaler.step(optimizer)\n        scaler.update()\n    except Exception:\n        print('invalid step')"
    assert _found(step) == []


def test_a_scaler_handed_to_a_function_not_read_may_be_updated_there() -> None:
    # the `update()` may be in `finish_step`: that it was never called is not a fact read
    assert _found("if norm <= 5.0:\n        scaler.step(optimizer)\n    finish_step(scaler)") == []


# CompressARC's fixed loop (lockbox 30, reduced): the skipping arm updates the scaler under the same setting the
# `unscale_` ran under; that `if` holds no other training event, and was run without splitting the paths, so the path
# that unscaled seemed to leave through the arm without `update()`: a certain GL007 on the fix.
SETTING = """\
import torch


def train(model, optimizer, dataloader, accumulation_steps, use_amp, skip):
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for batch_idx, (data, target) in enumerate(dataloader):
        loss = model(data).mean() / accumulation_steps
        scaler.scale(loss).backward()
        if (batch_idx + 1) % accumulation_steps == 0:
            if use_amp:
                scaler.unscale_(optimizer)
            if skip(model):
                {skipped}
            else:
                scaler.step(optimizer)
                scaler.update()
            optimizer.zero_grad()
"""


def test_an_update_under_the_setting_of_the_unscale_on_the_skipping_arm_is_silent() -> None:
    def found(skipped: str) -> list[tuple[str, int]]:
        return [(d.code, d.span.line) for d in check_source(SETTING.format(skipped=skipped), "train.py")]

    assert found("if use_amp:\n                    scaler.update()") == []
    assert found("print('skipped')") == [("GL007", 11)]
