"""Accelerate's fp16 mixed precision scales the loss inside `accelerator.backward` with a GradScaler of its own; the
prepared optimizer's `step()` unscales first, and `accelerator.clip_grad_norm_` / `unscale_gradients` unscale. A
`torch.nn.utils.clip_grad_norm_` between the two clips scaled gradients (GL007): FibLDM's ControlNet trainer, a
bug of lockbox 34 that the catalogue did not model. Certain where the code says fp16; possible where a setting or the
launch configuration decides; nothing for bf16 (no scaler) or DeepSpeed (its own loss scaling)."""

from __future__ import annotations

import inspect
import textwrap

import pytest

from gradcheck_lint.api import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.registry import all_rules

ALL = Settings.default().with_enabled(all_rules())

LOOP = """
import torch
from accelerate import Accelerator

accelerator = Accelerator({settings})
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, optimizer = accelerator.prepare(model, optimizer)
for x in torch.randn(8, 2, 4):
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    accelerator.backward(loss)
    {clip}
    optimizer.step()
"""
TORCH_CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"


def found(settings: str, clip: str = TORCH_CLIP) -> list[tuple[int, str, str, str]]:
    text = textwrap.dedent(LOOP.format(settings=settings, clip=clip))
    return [(d.span.line, d.code, d.certainty.value, d.message + " | " + (d.help or ""))
            for d in check_source(text, "train.py", settings=ALL)]


def test_fp16_clip_of_scaled_gradients_is_certain_and_names_the_framework_clip() -> None:
    [(line, code, certainty, text)] = found('mixed_precision="fp16"')
    assert (line, code, certainty) == (13, "GL007", "certain")
    assert "written by `accelerator.backward(loss)` at line 12" in text
    assert "`accelerator.clip_grad_norm_(...)`" in text  # the fix Accelerate gives, not a scaler the code has not got


@pytest.mark.parametrize("clip", [
    "accelerator.clip_grad_norm_(model.parameters(), 1.0)",  # unscales, then clips
    "accelerator.unscale_gradients(); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",  # every optimizer
    "accelerator.unscale_gradients(optimizer); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
    "pass",  # no clip: the prepared optimizer's own step unscales, no bypass of any scaler
])
def test_fp16_idioms_that_unscale_first_are_silent(clip: str) -> None:
    assert found('mixed_precision="fp16"', clip) == []


@pytest.mark.parametrize("settings", ['mixed_precision="bf16"', 'mixed_precision="no"',
                                      'mixed_precision="fp16", deepspeed_plugin=plugin'])
def test_no_grad_scaler_no_finding(settings: str) -> None:
    assert found(settings) == []


@pytest.mark.parametrize("settings", ["", "mixed_precision=args.mixed_precision", "mixed_precision=None"])
def test_precision_decided_out_of_sight_is_possible(settings: str) -> None:
    """`Accelerator()` takes its mixed precision from `accelerate launch --mixed_precision ...`: the clip is wrong on
    an fp16 launch, which the code does not show."""
    [(_line, code, certainty, _text)] = found(settings)
    assert (code, certainty) == ("GL007", "possible")


def test_catalogue_matches_accelerates_own_code() -> None:
    """What the catalogue says, read from the installed Accelerate: its backward scales with `self.scaler`, its
    prepared optimizer steps through the scaler, and its clip unscales first."""
    accelerate = pytest.importorskip("accelerate")
    from accelerate.optimizer import AcceleratedOptimizer

    assert "self.scaler.scale(loss).backward(" in inspect.getsource(accelerate.Accelerator.backward)
    assert "self.scaler.step(self.optimizer" in inspect.getsource(AcceleratedOptimizer.step)
    assert "self.unscale_gradients()" in inspect.getsource(accelerate.Accelerator.clip_grad_norm_)
    unscale = inspect.getsource(accelerate.Accelerator.unscale_gradients)
    assert "optimizer is None" in unscale and "self._optimizers" in unscale  # none given: every prepared optimizer


# Lightning Fabric, the same idea in its own row: `precision="16-mixed"` scales in `fabric.backward`
FABRIC = """
import torch
from lightning.fabric import Fabric

fabric = Fabric({settings})
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, optimizer = fabric.setup(model, optimizer)
for x in torch.randn(8, 2, 4):
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    fabric.backward(loss)
    {clip}
    optimizer.step()
"""


def fabric_found(settings: str, clip: str = TORCH_CLIP) -> list[tuple[int, str, str, str]]:
    text = textwrap.dedent(FABRIC.format(settings=settings, clip=clip))
    return [(d.span.line, d.code, d.certainty.value, d.help or "") for d in check_source(text, "train.py", settings=ALL)]


@pytest.mark.parametrize("settings", ['precision="16-mixed"', "precision=16", 'precision="16-mixed", devices=1'])
def test_fabric_16_mixed_clip_is_certain_with_fabrics_own_clip_as_the_fix(settings: str) -> None:
    [(line, code, certainty, help_)] = fabric_found(settings)
    assert (line, code, certainty) == (13, "GL007", "certain")
    assert "`fabric.clip_gradients(model, optimizer, max_norm=...)`" in help_


def test_fabric_without_a_scaler_or_with_its_own_clip_is_silent() -> None:
    assert fabric_found('precision="bf16-mixed"') == []
    assert fabric_found('precision="16-true"') == []  # pure fp16: no GradScaler
    assert fabric_found('precision="16-mixed"', "fabric.clip_gradients(model, optimizer, max_norm=1.0)") == []
    [(_line, code, certainty, _help)] = fabric_found("")  # `fabric run --precision 16-mixed` may decide
    assert (code, certainty) == ("GL007", "possible")


def test_fabric_model_matches_its_precision_plugin() -> None:
    pytest.importorskip("lightning")
    from lightning.fabric.plugins.precision.amp import MixedPrecision

    source = inspect.getsource(MixedPrecision)
    assert 'if scaler is None and self.precision == "16-mixed":' in source  # the plugin makes a GradScaler then
    assert "self.scaler.scale(tensor)" in source and "self.scaler.step(optimizer" in source
    assert "scaler.unscale_(optimizer)" in source  # its clipping unscales first
