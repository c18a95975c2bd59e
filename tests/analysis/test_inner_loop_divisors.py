"""A loss divided by the count of a loop inside the window (`for t in range(gen_length): ...backward(loss /
gen_length)` of a helper each micro-batch calls) is averaged over that loop's passes, one micro-batch's terms:
the window around them still adds up its micro-batches undivided (lockbox 17's justgrpo GL003: the divisor
`gen_length` was taken for an unknown that "may well be N")."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

TEXT = """\
import torch
import torch.nn.functional as F


def token_loss(model, ids, gen_length, scale):
    for t in range(gen_length):
        logits = model(ids[:, :t])
        loss = -F.log_softmax(logits, -1).mean()
        (loss * scale).backward()


def train(config, model, loader):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    for step in range(config.total_steps):
        optimizer.zero_grad()
        for accum_idx in range(config.grad_accumulation):
            ids = next(loader)
            token_loss(model, ids, config.gen_length, {scale})
        optimizer.step()
"""


@pytest.mark.parametrize(("scale", "gl003"), [
    ("1.0 / config.gen_length", True),  # the inner loop's terms averaged, the window summed
    ("1.0 / config.gen_length / config.grad_accumulation", False),
    ("1.0 / config.grad_accumulation", False),
    ("1.0 / config.norm", False),  # an unknown divisor may be the window
])
def test_divisor_of_an_inner_loop_is_not_the_window(scale: str, gl003: bool) -> None:
    found = {d.code for d in analyse_text(TEXT.format(scale=scale), "train.py").diagnostics}
    assert ("GL003" in found) is gl003


@pytest.mark.parametrize(("scale", "certainty"), [
    ("1.0 / gen_length", "certain"),  # the helper's own count, read
    ("1.0 / config.gen_length", "possible"),  # the caller's `config.gen_length`: the same quantity by its name only
])
def test_a_divisor_matched_to_the_inner_count_by_name_is_an_assumption(scale: str, certainty: str) -> None:
    text = TEXT.format(scale="scale").replace("        (loss * scale).backward()",
                                               f"        (loss * scale * {scale}).backward()".replace("config.", "cfg."))
    text = text.replace("def token_loss(model, ids, gen_length, scale):", "def token_loss(model, ids, gen_length, scale, cfg):")
    text = text.replace("token_loss(model, ids, config.gen_length, scale)", "token_loss(model, ids, config.gen_length, 1.0, config)")
    found = [d for d in analyse_text(text, "train.py").diagnostics if d.code == "GL003"]
    assert [d.certainty.value for d in found] == [certainty]
