"""GL007's "clip of a partial window" is judged on runs that step: a step under a flag fixed for the
run (`if accelerator.state.deepspeed_plugin is None:`, where DeepSpeed steps inside backward) leaves a
clip's mark before the next backward only on runs where that optimizer never steps here."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def codes(text: str) -> set[tuple[int, str]]:
    return {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics}


ACCELERATE = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=4)
transformer = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(transformer.parameters())
transformer, optimizer = accelerator.prepare(transformer, optimizer)
for step, batch in enumerate(loader):
    with accelerator.accumulate(transformer):
        accelerator.backward(transformer(batch).mean())
        {clip_gate}
            accelerator.clip_grad_norm_(transformer.parameters(), 1.0)
        if accelerator.state.deepspeed_plugin is None:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_clip_on_boundaries_with_the_step_under_a_run_flag_is_silent() -> None:
    # diffusers' CogVideoX LoRA examples
    assert codes(ACCELERATE.format(clip_gate="if accelerator.sync_gradients:")) == set()


def test_a_clip_on_every_micro_batch_with_the_step_under_a_run_flag_still_fires() -> None:
    assert (12, "GL007") in codes(ACCELERATE.format(clip_gate="if True:"))


PLAIN = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
N = 4
for i, x in enumerate(torch.randn(16, 2, 4)):
    (model(x).mean() / N).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if (i + 1) % N == 0:
        if {flag}:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_clip_on_every_micro_batch_is_reported_whatever_flag_guards_the_step() -> None:
    for flag in ("args.use_step", "not args.deepspeed", "True"):
        assert (8, "GL007") in codes(PLAIN.format(flag=flag)), flag
