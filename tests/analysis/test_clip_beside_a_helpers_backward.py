"""GL007 "clip on every micro-batch": the backward of each micro-batch runs in a helper that names no optimizer
(cs336's `sft_microbatch_train_step(policy_log_probs, N)` does `loss.backward()`), while the loop that calls it
built the optimizer over the model. The gradients the helper writes belong to that optimizer, whose parameters the
analysis knows: the clip before the gated step acts on a partial window. Clipped under the step's gate, silent."""

import pytest

from support import lines_of

LOOP = """
import torch
from torch import nn

N = 4


def sft_microbatch_train_step(policy_log_probs, gradient_accumulation_steps):
    loss = -policy_log_probs.mean()
    loss /= max(1, gradient_accumulation_steps)
    loss.backward()
    return loss, {{"loss": loss}}


def main():
    model = nn.Linear(4, 1)
    optimizer = torch.optim.AdamW(model.parameters())
    for i in range(100):
        loss, _ = sft_microbatch_train_step(model(torch.randn(8, 4)), N)
{clip_every}        if (i + 1) % N == 0:
{clip_gated}            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
"""
CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"


@pytest.mark.parametrize("every, gated, expected", [(True, False, [20]), (False, True, [])], ids=["every", "gated"])
def test_a_clip_beside_a_helpers_backward(every: bool, gated: bool, expected: list[int]) -> None:
    text = LOOP.format(clip_every="        " + CLIP if every else "", clip_gated="            " + CLIP if gated else "")
    assert lines_of("GL007", text) == expected
