"""The parts of an `and` test in another file of the project are remembered as in the checked file
(`analysis/boolparts.py`, `BoolParts.include`). Lockbox 17's ChatGLM trainer (a copy of HF Trainer's loop in
trainer_pt.py, subclassed in finetune_ptuning.py) unscales under `if max_grad_norm > 0 and not self.deepspeed:`
and steps under `if self.deepspeed: pass elif ...: scaler.step(); scaler.update()`: read from the subclass's
file, the `not self.deepspeed` part was not remembered, and a path that unscaled and then took the DeepSpeed
arm (no update) was said to unscale twice (a certain GL007 false alarm)."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.engine import analyse_text
from support import project_tree

TRAINER = """\
import torch
from torch import nn


def is_torch_tpu_available():
    return False


class Trainer:
    def __init__(self, model, args, deepspeed=None):
        self.model = model
        self.args = args
        self.optimizer = torch.optim.AdamW(model.parameters())
        self.scaler = torch.cuda.amp.GradScaler()
        self.do_grad_scaling = args.fp16
        self.deepspeed = deepspeed

    def train(self, loader):
        args = self.args
        model = self.model
        if args.deepspeed:
            deepspeed_engine, optimizer = init_deepspeed(model, args)
            self.deepspeed = deepspeed_engine
            self.model = deepspeed_engine
        total_batched_samples = 0
        for epoch in range(3):
            for step, inputs in enumerate(loader):
                total_batched_samples += 1
                loss = model(inputs).mean() / args.gradient_accumulation_steps
                if self.do_grad_scaling:
                    self.scaler.scale(loss).backward()
                else:
                    loss.backward()
                if total_batched_samples % args.gradient_accumulation_steps == 0:
                    if args.max_grad_norm is not None and args.max_grad_norm > 0 and not self.deepspeed:
                        if self.do_grad_scaling:
                            self.scaler.unscale_(self.optimizer)
                        nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                    if self.deepspeed:
                        pass
                    elif is_torch_tpu_available():
                        if self.do_grad_scaling:
                            self.scaler.step(self.optimizer)
                            self.scaler.update()
                        else:
                            self.optimizer.step()
                    elif self.do_grad_scaling:
                        self.scaler.step(self.optimizer)
                        self.scaler.update()
                    else:
                        self.optimizer.step()
                    model.zero_grad()
"""

RUN = """\
from trainer import Trainer


class Modified(Trainer):
    def evaluate(self):
        return None


def main(model, args, loader):
    Modified(model, args).train(loader)
"""


def test_and_part_of_a_test_in_another_file_decides_a_later_test(tmp_path: Path) -> None:
    root = project_tree(tmp_path, {"trainer.py": TRAINER, "run.py": RUN})
    for name in ("run.py", "trainer.py"):
        path = root / name
        assert "GL007" not in {d.code for d in analyse_text(path.read_text(), str(path)).diagnostics}


def test_a_real_second_unscale_in_another_file_is_still_reported(tmp_path: Path) -> None:
    """An unscale on every micro-batch, after its backward: PyTorch raises on the second micro-batch of a window."""
    trainer = TRAINER.replace("                if total_batched_samples %", "                self.scaler.unscale_(self.optimizer)\n                if total_batched_samples %", 1)
    assert trainer != TRAINER
    root = project_tree(tmp_path, {"trainer.py": trainer, "run.py": RUN})
    path = root / "trainer.py"  # (reported with the file that holds it, not again with its caller)
    assert "GL007" in {d.code for d in analyse_text(path.read_text(), str(path)).diagnostics}
