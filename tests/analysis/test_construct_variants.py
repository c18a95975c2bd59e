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


# `keyword:literal=type`: `Fabric(devices=1)` (or `strategy="single_device"`) runs one process, so `fabric.setup` wraps
# nothing in DDP (lockbox 16's pytorch-memory-optim scripts hard-code `devices=1`: two certain GL006 false alarms,
# found after its opening; they do not count there). Any other device count, or none given, may be several processes.
FABRIC = """\
import torch
import lightning as L
from torch import nn

fabric = L.Fabric({arguments})
model = nn.Linear(16, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, optimizer = fabric.setup(model, optimizer)
accumulation_steps = 4

for step, (x, y) in enumerate(loader):
    loss = nn.functional.mse_loss(model(x), y) / accumulation_steps
    fabric.backward(loss)
    if (step + 1) % accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize("arguments, expected", [
    ("accelerator='cuda', devices=4", {"GL006"}),
    ("accelerator='cuda'", {"GL006"}),
    ("accelerator='cuda', devices=1", set()),
    ("accelerator='cuda', devices=n_devices", {"GL006"}),
    ("strategy='single_device'", set()),
    ("strategy='ddp'", {"GL006"}),
])
def test_a_fabric_of_one_device_wraps_nothing(arguments: str, expected: set[str]) -> None:
    assert {d.code for d in check_source(FABRIC.format(arguments=arguments), "train.py")} == expected


def test_a_variant_names_a_keyword_and_may_name_its_literal() -> None:
    from gradcheck_lint.analysis.apimodels.schema import ModelError, _effect

    for good in ("devices=t.One", "devices:1=t.One", "strategy:single_device=t.One;devices:1=t.One"):
        _effect({"effect": "construct", "type": "t.Many", "variant": good}, "row")
    for bad in ("devices:=t.One", "1devices=t.One", "devices:1="):
        with pytest.raises(ModelError):
            _effect({"effect": "construct", "type": "t.Many", "variant": bad}, "row")
