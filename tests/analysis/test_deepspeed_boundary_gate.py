"""`if engine.is_gradient_accumulation_boundary():` is the boundary on which DeepSpeed's gated `engine.step()` fires, as
Accelerate's `sync_gradients` is for a prepared optimizer. With the window given in the engine's config it was read as an
unknown test: MiniPLM's clip under it (lockbox 25) was a certain GL007 "runs on every micro-batch"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

TRAINER = """\
import torch
import deepspeed


class Trainer:
    def setup(self, model):
        self.model, self.optimizer, _, _ = deepspeed.initialize(
            model=model, model_parameters=model.parameters(), config={"gradient_accumulation_steps": 4})

    def train_pass(self, x):
        loss = self.model(x).pow(2).mean()
        self.model.backward(loss)
        CLIP
        self.model.step()

    def train(self, loader):
        self.setup(torch.nn.Linear(4, 1))
        for x in loader:
            self.train_pass(x)
"""
CALL = "torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)"


def _found(tmp_path: Path, clip: str) -> list[tuple[str, int]]:
    text = TRAINER.replace("CLIP", clip)
    path = tmp_path / "trainer.py"
    path.write_text(text)
    settings = Settings.default().with_enabled(frozenset({f"GL00{i}" for i in range(1, 10)}))
    return [(d.code, d.line) for d in analyse_text(text, str(path), settings).diagnostics if not d.possible]


def test_a_clip_under_the_engine_s_boundary_test_is_on_the_stepping_micro_batch(tmp_path: Path) -> None:
    assert _found(tmp_path, f"if self.model.is_gradient_accumulation_boundary():\n            {CALL}") == []


@pytest.mark.parametrize("clip", [CALL, f"if not self.model.is_gradient_accumulation_boundary():\n            {CALL}"])
def test_a_clip_off_the_boundary_is_reported(tmp_path: Path, clip: str) -> None:
    assert [code for code, _ in _found(tmp_path, clip)] == ["GL007"]
