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
