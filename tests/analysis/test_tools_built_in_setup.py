"""A framework tool an `__init__` leaves as None and a setup method builds (`self.loss_scaler = None`, then
`self.loss_scaler = NativeScaler()` in `_init_amp()`) is that tool or None in the other methods
(`Objects._tool_built_later`). Before, the placeholder was dropped and the attribute read from its use: the
scaler's call was an unknown call handed the optimizer, which might have cleared its gradients, and a second
step after timm's `NativeScaler.__call__` (which steps) went unreported (OpenSTL's SimVP, a lockbox-14 miss; the
change was made after that lockbox's opening)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

METHOD = """\
import torch
from torch import nn
from timm.utils import NativeScaler


class Method:
    def __init__(self, fp16):
        self.model = nn.Linear(4, 1)
        self.model_optim = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.fp16 = fp16
        self.loss_scaler = None

    def _init_amp(self):
        if self.fp16:
            self.loss_scaler = {built}

    def train_one_epoch(self, loader):
        for x, y in loader:
            self.model_optim.zero_grad()
            loss = nn.functional.mse_loss(self.model(x), y)
            if self.loss_scaler is not None:
                self.loss_scaler(loss, self.model_optim, parameters=self.model.parameters())
{step}
"""
TWICE = """\
            else:
                loss.backward()
            self.model_optim.step()"""
ONCE = """\
            else:
                loss.backward()
                self.model_optim.step()"""


def found(built: str, step: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in analyse_text(METHOD.format(built=built, step=step), "method.py").diagnostics]


def test_a_second_step_after_a_scaler_built_in_a_setup_method() -> None:
    assert found("NativeScaler()", TWICE) == [(25, "GL001")]


def test_one_step_per_path_is_right() -> None:
    assert found("NativeScaler()", ONCE) == []


@pytest.mark.parametrize("built", ["make_scaler()", "None if cheap else NativeScaler()"])
def test_what_is_not_one_modelled_tool_stays_read_from_its_use(built: str) -> None:
    assert found(built, TWICE) == []
