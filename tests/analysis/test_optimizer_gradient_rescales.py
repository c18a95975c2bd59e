"""An optimizer's own method that rescales the gradients of everything it steps (fairseq's
`FairseqOptimizer.multiply_grads(c)`, and the wrappers written after it) normalises a window of summed
losses: `optimizer.multiply_grads(1 / sample_size)` before the step is the window's division, made on the
gradients. The method of an optimizer no API model describes was taken to do nothing, so a course
notebook's token-normalised window (an optimizer handed in as a parameter) was reported as "not divided"
(GL003, `certain`; lockbox 15's Hung-yi Lee HW05, copied five times). Without the rescale, or with it on
another optimizer, the window is still reported."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text
from support import parse_expected_findings

_NOAM = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.cuda.amp import GradScaler, autocast


class NoamOpt:
    def __init__(self, model_size, factor, warmup, optimizer):
        self.optimizer = optimizer
        self._step = 0
        self.warmup = warmup
        self.factor = factor
        self.model_size = model_size

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def multiply_grads(self, c):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.data.mul_(c)

    def rate(self):
        step = max(self._step, 1)
        return self.factor * self.model_size ** -0.5 * min(step ** -0.5, step * self.warmup ** -1.5)

    def step(self):
        self._step += 1
        for p in self.param_groups:
            p["lr"] = self.rate()
        self.optimizer.step()


model = nn.Linear(8, 8)
criterion = nn.CrossEntropyLoss(reduction="sum")
optimizer = NoamOpt(8, 2.0, 4000, torch.optim.AdamW(model.parameters(), lr=0, betas=(0.9, 0.98)))


def train_one_epoch(batches, model, criterion, optimizer):
    scaler = GradScaler()
    model.train()
    for samples in batches:
        model.zero_grad()
        sample_size = 0
        for sample in samples:
            sample_size += sample["ntokens"]
            with autocast():
                lprobs = F.log_softmax(model(sample["net_input"]), -1)
                loss = criterion(lprobs.view(-1, lprobs.size(-1)), sample["target"].view(-1))
            scaler.scale(loss).backward(){mark}
        scaler.unscale_(optimizer)
{rescale}        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
"""

_TRAINER = """\
import torch


class Trainer:
    def __init__(self, model, criterion, optimizer):
        self.model = model
        self.criterion = criterion
        self.optimizer = optimizer

    def train_step(self, samples):
        self.model.train()
        self.optimizer.zero_grad()
        sample_size = 0
        for sample in samples:
            loss, n = self.criterion(self.model, sample)
            sample_size += n
            loss.backward(){mark}
{rescale}        self.optimizer.step()
"""

_GAN = """\
import torch
import torch.nn as nn

G = nn.Linear(4, 4)
D = nn.Linear(4, 1)
opt_g = torch.optim.Adam(G.parameters())
opt_d = torch.optim.Adam(D.parameters())


def train(batches, accum):
    for samples in batches:
        opt_g.zero_grad()
        opt_d.zero_grad()
        for z in samples:
            D(G(z)).mean().backward(){mark}
        opt_d.multiply_grads(1.0 / len(samples))
        opt_g.step()
        opt_d.step()
"""

CASES = {
    # (source, rescale statement, GL003 expected)
    "notebook_wrapper_rescaled": (_NOAM, "        optimizer.multiply_grads(1 / (sample_size or 1.0))\n", False),
    "notebook_wrapper_not_rescaled": (_NOAM, "", True),
    "trainer_rescaled": (_TRAINER, "        self.optimizer.multiply_grads(1.0 / sample_size)\n", False),
    "trainer_not_rescaled": (_TRAINER, "", True),
}


def _gl003(text: str) -> set[tuple[int, str]]:
    return {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics if d.code == "GL003"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_window_rescaled_by_its_optimizer_is_divided(name: str) -> None:
    source, rescale, reported = CASES[name]
    text = source.replace("{rescale}", rescale).replace("{mark}", "  # expect: GL003" if reported else "")
    expected = {(line, code) for line, code, _c in parse_expected_findings(text) if code == "GL003"}
    assert bool(expected) == reported
    assert _gl003(text) == expected


def test_the_rescale_of_another_optimizer_leaves_the_window_undivided() -> None:
    # opt_d's gradients are rescaled; opt_g's are the sum of the window's passes: reported at the backward
    text = _GAN.replace("{mark}", "  # expect: GL003")
    expected = {(line, code) for line, code, _c in parse_expected_findings(text) if code == "GL003"}
    assert expected and _gl003(text) == expected
