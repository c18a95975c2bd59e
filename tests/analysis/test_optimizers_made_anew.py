"""Optimizers made anew by a constructor that runs again at the same call path: a trainer built on each
iteration of a module-level loop over settings (`for lbfgs in (False, True): Trainer(model, lbfgs=lbfgs,
use_amp=False).train(loader)`). Each iteration's optimizer is the same entity as the last one's, and its
`__init__` (run once, its effects replayed) forgets what the paths assumed of `self.use_amp`: the AMP
stage the last instance left (gradients scaled on a micro-batch that did not step) was then paired with
the new instance's other setting, a false GL007 at the clip. A new optimizer has no AMP stage
(`Flow.renew`); built in a function called twice, the two trainers were two entities already."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


TRAINER = """\
import torch
from torch import nn


class Trainer:
    def __init__(self, model, use_amp, lbfgs):
        self.model = model
        self.use_amp = use_amp
        self.scaler = torch.cuda.amp.GradScaler() if use_amp else None
        if lbfgs:
            self.optimizer = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=4)
        else:
            self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def train_step(self, x, y, should_step):
        loss = nn.functional.mse_loss(self.model(x), y) / 4
        if self.use_amp:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()
        if not should_step:
            return loss
UNSCALE
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        if self.use_amp:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad()
        return loss

    def train(self, loader):
        for i, (x, y) in enumerate(loader):
            self.train_step(x, y, (i + 1) % 4 == 0)


loader = [(torch.randn(8, 5), torch.randn(8, 1)) for _ in range(8)]
"""

UNSCALED = """\
        if self.use_amp:
            self.scaler.unscale_(self.optimizer)"""
NOT_UNSCALED = """\
        pass"""

DRIVERS = {
    "loop over a setting": """
for lbfgs in (False, True):
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
    Trainer(model, use_amp=AMP, lbfgs=lbfgs).train(loader)
""",
    "loop, one model": """
model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
for lbfgs in (False, True):
    Trainer(model, use_amp=AMP, lbfgs=lbfgs).train(loader)
""",
    "loop, literal settings": """
for _ in range(2):
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
    Trainer(model, use_amp=AMP, lbfgs=False).train(loader)
""",
}


def program(unscale: str, driver: str, amp: str) -> str:
    return TRAINER.replace("UNSCALE", unscale) + DRIVERS[driver].replace("AMP", amp)


def clip_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if "clip_grad_norm_" in line)


@pytest.mark.parametrize("driver", sorted(DRIVERS))
@pytest.mark.parametrize("amp", ["False", "torch.cuda.is_available()"])
def test_unscaled_before_the_clip_is_silent(driver: str, amp: str) -> None:
    assert not [f for f in found(program(UNSCALED, driver, amp)) if f[0] == "GL007"]


@pytest.mark.parametrize("driver", sorted(DRIVERS))
@pytest.mark.parametrize("amp", ["True", "torch.cuda.is_available()"])
def test_clipped_scaled_still_reported(driver: str, amp: str) -> None:
    text = program(NOT_UNSCALED, driver, amp)
    assert ("GL007", clip_line(text)) in {f[:2] for f in found(text)}


def test_a_function_called_twice_stays_silent() -> None:
    driver = """
def fit(lbfgs):
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
    Trainer(model, use_amp=False, lbfgs=lbfgs).train(loader)


fit(False)
fit(True)
"""
    assert not [f for f in found(TRAINER.replace("UNSCALE", UNSCALED) + driver) if f[0] == "GL007"]


def test_new_optimizer_after_scaled_window_of_the_old_one() -> None:
    # the scaled gradients a partial window of the first trainer left are cleared by nothing; the second
    # trainer's own optimizer unscales before its clip: no GL007 at the clip of either
    driver = """
for use_amp in (True, False):
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
    Trainer(model, use_amp=use_amp, lbfgs=False).train(loader)
"""
    assert not [f for f in found(TRAINER.replace("UNSCALE", UNSCALED) + driver) if f[0] == "GL007"]
