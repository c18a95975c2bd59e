"""An `elif` gate after a test that holds on the first micro-batch is not reached there (GL004).

VL-T5 (lockbox 11, after its opening: it does not count there) forces the flag off on the first micro-batch
and tests the window only after: `if step_i == 0: update = False` / `elif step_i % N == 0 ...: update = True`.
Read alone, the `elif` fires at `step_i == 0`; on the path that reaches it, `step_i` is never 0, so it first holds
at N: the first window is N + 1 micro-batches (0..N), which is reported as such, not as a step on the first one."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int]]:
    return sorted((d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics)


LOOP = """\
import torch


def train(model, loader, optim, accum):
    for step_i, batch in enumerate(loader):
        loss = model(batch).mean() / accum
        loss.backward()
        update = True
        if accum > 1:
            FIRST
                update = False
            elif step_i % accum == 0 or step_i == len(loader) - 1:
                update = True
            else:
                update = False
        if update:
            optim.step()
            optim.zero_grad()
"""


def messages(text: str) -> list[str]:
    return [d.message for d in analyse_text(text, "train.py").diagnostics if d.code == "GL004"]


def test_the_first_micro_batch_takes_the_earlier_branch_and_the_first_window_is_longer() -> None:
    for first in ("if step_i == 0:", "if not step_i:"):
        assert found(LOOP.replace("FIRST", first)) == [("GL004", 12)]
        (message,) = messages(LOOP.replace("FIRST", first))
        assert "first holds after more than N micro-batches" in message and "one micro-batch alone" not in message


def test_an_earlier_test_true_beyond_zero_leaves_the_windows_unknown() -> None:
    # `step_i < 3` also takes the micro-batches after the first: where the windows fall is not judged
    assert found(LOOP.replace("FIRST", "if step_i < 3:")) == []


def test_an_earlier_test_that_does_not_hold_at_zero_leaves_the_elif_firing_first() -> None:
    # `step_i == 1` is false on the first micro-batch: the `elif` is reached there and steps on it
    assert found(LOOP.replace("FIRST", "if step_i == 1:")) == [("GL004", 12)]


def test_the_rewrite_after_a_first_micro_batch_branch_is_unsafe() -> None:
    """`(step_i + 1) % N` after `if step_i == 0: update = False` is right for N >= 2 but still skips the first
    micro-batch when N is 1: offered only with `--unsafe-fixes`."""
    text = LOOP.replace("FIRST", "if step_i == 0:").replace(" or step_i == len(loader) - 1", "")
    (diag,) = [d for d in analyse_text(text, "train.py").diagnostics if d.code == "GL004"]
    assert diag.fix is not None and diag.fix.applicability.value == "unsafe"
