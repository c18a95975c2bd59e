"""A `try` whose body changes no gradient leaves them as they were on its handler's path.

rainier's imitation trainer (lockbox 15, two GL003 bugs found only as `possible`; fixed after the opening) fetches
each micro-batch with `try: batch = next(it)` / `except StopIteration: it = iter(loader); batch = next(it)`. The
handler's path took every gradient for uncertain (the exception "may have come from anywhere in the `try`"), though
nothing in that `try` touches a gradient: the undivided window was only `possible`."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> set[tuple[str, str]]:
    return {(d.code, d.certainty) for d in analyse_text(text, "train.py").diagnostics}


WINDOW = """\
import torch


def train(model, loader, steps, accum):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    it = iter(loader)
    for step in range(steps):
        optimizer.zero_grad()
        for _ in range(accum):
            try:
                {fetch}
            except StopIteration:
                it = iter(loader)
                batch = next(it)
            loss = model(batch).mean(){divide}
            loss.backward()
        optimizer.step()
"""


def test_a_fetch_in_a_try_leaves_the_undivided_window_certain():
    assert ("GL003", "certain") in found(WINDOW.format(fetch="batch = next(it)", divide=""))


def test_the_divided_window_is_silent():
    assert found(WINDOW.format(fetch="batch = next(it)", divide=" / accum")) == set()


def test_a_try_that_may_have_cleared_still_leaves_the_handler_uncertain():
    # the clear in the `try` may or may not have run when the handler starts: gradients uncertain there
    text = WINDOW.format(fetch="batch = next(it)\n                optimizer.zero_grad()", divide="")
    assert ("GL003", "certain") not in found(text)
