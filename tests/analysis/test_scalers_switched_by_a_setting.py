"""A GradScaler built `enabled=<setting>` scales only on runs where the setting holds (`switches`).

Hybrid-Continual-Learning-Study (lockbox 29, four certain GL007 false alarms): the base trainer builds
`GradScaler(enabled=cfg.get("fp16", False))` and keeps `self.fp16 = cfg.get("fp16", False)`; each method runs
`unscale_` only `if self.fp16:` and then rewrites the gradients. Where `self.fp16` is false the scaler is off and the
gradients were never scaled. A clip gated by some other setting still sees scaled gradients on the run where both
are on: that stays GL007."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch


def train(model, loader, use_amp, args):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler({enabled})
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        if {unscale_test}:
            scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
"""


def gl007(source: str) -> list[tuple[int, bool]]:
    return [(d.line, d.possible) for d in analyse_text(source, "train.py").diagnostics if d.code == "GL007"]


@pytest.mark.parametrize(("enabled", "unscale_test"), [
    ("enabled=use_amp", "use_amp"),
    ("enabled=not args.fp32", "not args.fp32"),
    ("enabled=args.amp == 'fp16'", "args.amp == 'fp16'"),
])
def test_unscale_gated_by_the_scalers_own_setting(enabled: str, unscale_test: str) -> None:
    assert gl007(LOOP.format(enabled=enabled, unscale_test=unscale_test)) == []


@pytest.mark.parametrize(("enabled", "unscale_test"), [
    ("enabled=use_amp", "args.unscale"),  # another setting: the run with AMP on and it off clips scaled gradients
    ("", "use_amp"),  # always on: the run without `use_amp` clips scaled gradients
    ("enabled=args.amp", "not args.amp"),  # the wrong way round
])
def test_unscale_gated_by_anything_else(enabled: str, unscale_test: str) -> None:
    assert gl007(LOOP.format(enabled=enabled, unscale_test=unscale_test)) == [(13, False)]


def test_a_scaler_built_off_scales_nothing() -> None:
    assert gl007(LOOP.format(enabled="enabled=False", unscale_test="args.never")) == []


def test_a_setting_no_branch_tests_is_on_for_the_finding() -> None:
    source = LOOP.replace("        if {unscale_test}:\n            scaler.unscale_(opt)\n", "")
    assert gl007(source.format(enabled="enabled=use_amp")) == [(11, False)]


TRAINER = """\
import torch


class Base:
    def __init__(self, cfg, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.scaler = torch.amp.GradScaler("cuda", 65536.0, 2.0, 0.5, 2000, {enabled})
        self.fp16 = cfg.get("fp16", False)


class Agem(Base):
    def observe(self, x, y):
        self.optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(self.model(x), y)
        self.scaler.scale(loss).backward()
        if self.fp16:
            self.scaler.unscale_(self.optimizer)
        for p in self.model.parameters():
            p.grad.copy_(p.grad.clamp(-1, 1))
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.item()
"""


def test_the_setting_the_constructor_also_keeps_under_an_attribute() -> None:
    assert gl007(TRAINER.format(enabled='cfg.get("fp16", False)')) == []
    assert gl007(TRAINER.format(enabled='cfg.get("amp", False)')) == [(20, False)]


DISABLED_QUERY = """\
import torch
from torch.amp import GradScaler


def train(model, loader, use_amp, accum):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = GradScaler(enabled=use_amp)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y) / accum
        scaler.scale(loss).backward()
        if {test}:
            scaler.unscale_(optimizer)
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""


def test_the_scalers_own_answer_is_its_setting() -> None:
    """`unscale_` of a scaler that is off returns at once: on every micro-batch it raises nothing (deepinv's fix)."""
    assert gl007(DISABLED_QUERY.format(test="not scaler.is_enabled()")) == []
    assert gl007(DISABLED_QUERY.format(test="not use_amp")) == []
    assert gl007(DISABLED_QUERY.format(test="scaler.is_enabled()")) == [(12, False)]


# deepinv's trainer after its fix (lockbox 29, bug gl007-deepinv-multidataset-unscale-per-dataset, NOT CLEAN): the
# per-dataset clip is deferred when the scaler is on and one step covers every dataset; the step of `compute_loss` is
# tied to the same setting by its caller, `step=(not self.optimizer_step_multi_dataset)`.
MULTI_DATASET = """\
import torch
from torch.amp import GradScaler


class Trainer:
    def __init__(self, model, G, grad_clip=None, multi=True, fp16=True):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        self.scaler = GradScaler(enabled=fp16)
        self.grad_clip = grad_clip
        self.optimizer_step_multi_dataset = multi
        self.G = G

    def check_clip_grad(self):
        if self.grad_clip is not None:
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)

    def compute_loss(self, x, y, step=False):
        if step:
            self.optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(self.model(x), y) / self.G
        self.scaler.scale(loss).backward()
        {defer}
            self.check_clip_grad()
        if not self.optimizer_step_multi_dataset:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        return loss

    def step(self, iterators):
        if self.optimizer_step_multi_dataset:
            self.optimizer.zero_grad()
        for g in range(self.G):
            x, y = next(iterators[g])
            self.compute_loss(x, y, step=(not self.optimizer_step_multi_dataset))
        if self.optimizer_step_multi_dataset:
            if self.scaler.is_enabled():
                self.check_clip_grad()
            self.scaler.step(self.optimizer)
            self.scaler.update()
"""


@pytest.mark.parametrize("defer", [
    "defer_clip = self.scaler.is_enabled() and self.optimizer_step_multi_dataset\n        if not defer_clip:",
    "if not (self.scaler.is_enabled() and self.optimizer_step_multi_dataset):",
])
def test_a_clip_deferred_where_the_scaler_is_on(defer: str) -> None:
    """The second `unscale_` of a window is not reported: where the scaler is on and one step covers the datasets,
    the clip is deferred to the step; elsewhere the scaler is off or each dataset steps. (Where it is off, the clip of
    each dataset's partial sum is a true leftover of the fix: the partial-window report at the clip stays.)"""
    found = gl007(MULTI_DATASET.format(defer=defer))
    assert [line for line, _possible in found] == [17]


def test_a_parameter_handed_the_negation_of_a_setting_is_that_setting() -> None:
    """`compute_loss(..., step=(not self.optimizer_step_multi_dataset))`: `if step:` in the callee is the setting's test
    the other way round, so its clear and the caller's clear never both run in one window (no GL002), and each window
    is cleared (no GL001)."""
    source = MULTI_DATASET.format(defer="if not self.optimizer_step_multi_dataset:")
    found = [(d.line, d.code) for d in analyse_text(source, "trainer.py").diagnostics]
    assert found == []
    swapped = source.replace("step=(not self.optimizer_step_multi_dataset)", "step=self.optimizer_step_multi_dataset")
    assert {code for _line, code in (
        (d.line, d.code) for d in analyse_text(swapped, "trainer.py").diagnostics)} & {"GL001", "GL002"}
