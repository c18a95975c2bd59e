"""A clip that finds no gradients on its path clips no partial window: Accelerate's
`if accelerator.sync_gradients: clip` written after `optimizer.step(); optimizer.zero_grad()` (transformers_tasks'
trainers, two certain GL007 false alarms of lockbox 9, found after its opening: they do not count on it). The
micro-batches after it add to no clipped sum. A clip on micro-batches that do hold a partial sum is still one."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


ACCELERATE = """\
import torch
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, loader):
        self.accelerator = Accelerator(gradient_accumulation_steps=4)
        self.optim = torch.optim.AdamW(model.parameters())
        self.model, self.optim, self.loader = self.accelerator.prepare(model, self.optim, loader)

    def train_step(self, batch):
        loss = self.model(**batch).loss.mean()
        self.accelerator.backward(loss)
        self.optim.step()
        self.optim.zero_grad()
        return loss

    def train(self):
        for batch in self.loader:
            with self.accelerator.accumulate(self.model):
                self.train_step(batch)
                if self.accelerator.sync_gradients:
                    self.accelerator.clip_grad_norm_(self.model.parameters(), 1.0)
"""


def test_a_clip_after_the_step_and_clear_under_the_sync_gate_clips_no_partial_window() -> None:
    assert found(ACCELERATE) == []


PLAIN = """\
import torch


def train(model, loader, accum):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        CLIP_BEFORE
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
        CLIP_AFTER
"""
CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"


def test_a_clip_on_every_micro_batch_still_clips_a_partial_sum() -> None:
    """Before the gated step the clip sees each partial sum; after it, too, on every micro-batch that did not step."""
    before = PLAIN.replace("CLIP_BEFORE", CLIP).replace("        CLIP_AFTER\n", "")
    after = PLAIN.replace("CLIP_AFTER", CLIP).replace("        CLIP_BEFORE\n", "")
    assert found(before) == [("GL007", 9, "certain")]
    assert found(after) == [("GL007", 12, "certain")]


def test_a_clip_right_after_each_step_and_clear_finds_nothing_to_clip() -> None:
    """Written inside the gate, after the step and the clear: it acts on no gradient, the window is whole."""
    text = PLAIN.replace("        CLIP_BEFORE\n", "").replace("        CLIP_AFTER\n", "").replace(
        "            opt.zero_grad()\n", "            opt.zero_grad()\n            " + CLIP + "\n")
    assert found(text) == []


HANDED = """\
import torch
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, loader, accelerator):
        self.accelerator = accelerator
        self.model = model
        self.loader = loader
        self.optim = torch.optim.AdamW(model.parameters())

    def prepare(self):
        self.model, self.optim, self.loader = self.accelerator.prepare(self.model, self.optim, self.loader)

    def train_step(self, batch):
        loss = self.model(**batch).loss.mean()
        self.accelerator.backward(loss)
        self.optim.step()
        self.optim.zero_grad()
        return loss

    def train(self):
        self.prepare()
        for batch in self.loader:
            with self.accelerator.accumulate(self.model):
                self.train_step(batch)
                CLIP


def main():
    accelerator = Accelerator(gradient_accumulation_steps=4)
    trainer = Trainer(torch.nn.Linear(4, 4), [], accelerator)
    trainer.train()
"""
ACC_CLIP = "self.accelerator.clip_grad_norm_(self.model.parameters(), 1.0)"


def test_the_sync_gate_is_the_accelerators_boundary_whatever_name_it_was_made_under() -> None:
    """The accelerator made in `main()` as `accelerator` and read in the trainer as `self.accelerator`: its
    `sync_gradients` is the boundary its gated step fires on, one fact (transformers_tasks' entry scripts kept the
    GL007 pair of lockbox 9 because the two were read as independent tests, so a path stepped nothing and clipped)."""
    gated = HANDED.replace("CLIP", "if self.accelerator.sync_gradients:\n                    " + ACC_CLIP)
    negated = HANDED.replace("CLIP", "if not self.accelerator.sync_gradients:\n                    continue\n"
                             "                " + ACC_CLIP)
    assert found(gated) == []
    assert found(negated) == []


def test_a_clip_on_every_micro_batch_of_a_handed_accelerator_is_still_reported() -> None:
    assert found(HANDED.replace("CLIP", ACC_CLIP)) == [("GL007", 27, "certain")]
