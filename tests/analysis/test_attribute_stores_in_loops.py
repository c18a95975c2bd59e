"""A loop that stores into an attribute of an attribute (`self.model.require_backward_grad_sync = ...`,
DDP's sync flag set per micro-batch) rebinds neither `self` nor `self.scaler`: what a path learnt of
`if self.scaler:` still holds in the loop's next iteration (languini-kitchen's trainer)."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint.analysis.syntax import rebound_by
from gradcheck_lint.engine import analyse_text


def codes(text: str) -> set[tuple[int, str]]:
    return {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics}


@pytest.mark.parametrize(("statement", "rebound"), [
    ("self.model.require_backward_grad_sync = v", ["self.model.require_backward_grad_sync"]),
    ("self.a.b.c = v", ["self.a.b.c"]),
    ("x = v", ["x"]),
    ("a, (self.b, *c) = v", ["a", "self.b", "c"]),
    ("flags['fp16'] = v", ["flags['fp16']", "flags"]),
    ("self.cfg.flags[k] = v", ["self.cfg.flags[k]", "self.cfg.flags"]),
    ("x[i][j] = v", ["x[i][j]", "x[i]", "x"]),
])
def test_a_store_changes_its_target_and_the_containers_it_writes_into(statement: str, rebound: list[str]) -> None:
    target = ast.parse(statement).body[0].targets[0]  # type: ignore[attr-defined]
    assert [ast.unparse(t) for t in rebound_by(target)] == rebound


TRAINER = """\
import torch


class Trainer:
    def __init__(self, model, opt, accum, clip):
        self.model = model
        self.opt = opt
        self.accum = accum
        self.clip = clip
        self.scaler = torch.cuda.amp.GradScaler()

    def train(self, loader):
        for batch in loader:
            for micro_step, micro in enumerate(batch):
                {store} = (micro_step == self.accum - 1)
                loss = self.model(micro).mean() / self.accum
                if self.scaler:
                    self.scaler.scale(loss).backward()
                else:
                    loss.backward()
{unscale}            if self.clip > 0.0:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            if self.scaler:
                self.scaler.step(self.opt)
                self.scaler.update()
            else:
                self.opt.step()
            self.opt.zero_grad(set_to_none=True)
"""
UNSCALE = "            if self.scaler:\n                self.scaler.unscale_(self.opt)\n"


@pytest.mark.parametrize("store", ["self.model.require_backward_grad_sync", "self.model.module.sync", "self.sync"])
def test_a_scaler_test_survives_a_store_into_another_attribute(store: str) -> None:
    assert codes(TRAINER.format(store=store, unscale=UNSCALE)) == set()


@pytest.mark.parametrize("store", ["self.model.require_backward_grad_sync", "self.sync"])
def test_the_clip_without_unscale_is_still_reported(store: str) -> None:
    text = TRAINER.format(store=store, unscale="")
    clip = next(i for i, line in enumerate(text.splitlines(), 1) if "clip_grad_norm_" in line)
    assert (clip, "GL007") in codes(text)
