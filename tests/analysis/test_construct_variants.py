"""A construct row's `variant`: the keyword a call passes chooses the type it makes.

`Accelerator(deepspeed_plugin=plugin)` prepares DeepSpeed engines, which reduce gradients only at the
window's boundary themselves: no DDP to put in `no_sync` (ChatGLM-finetune-LoRA, a certain GL006 false
alarm on lockbox 13). Its backward still divides by the plugin's window (GL010 stays)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

LOOP = """\
import torch
from accelerate import Accelerator, DeepSpeedPlugin
from torch import nn

plugin = DeepSpeedPlugin(gradient_accumulation_steps=4)
accelerator = Accelerator({arguments})
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, optimizer = accelerator.prepare(model, optimizer)
accumulation_steps = 4

for step, (x, y) in enumerate(loader):
    loss = nn.functional.mse_loss(model(x), y) / accumulation_steps
    accelerator.backward(loss)
    if (step + 1) % accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def codes(arguments: str) -> set[str]:
    return {d.code for d in check_source(LOOP.format(arguments=arguments), "train.py")}


@pytest.mark.parametrize("arguments, expected", [
    ("mixed_precision='fp16'", {"GL006"}),
    ("mixed_precision='fp16', deepspeed_plugin=None", {"GL006"}),
    ("mixed_precision='fp16', deepspeed_plugin=plugin", {"GL010"}),
])
def test_a_deepspeed_plugin_prepares_engines_that_need_no_no_sync(arguments: str, expected: set[str]) -> None:
    assert codes(arguments) == expected
