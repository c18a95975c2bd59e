"""A clip of gradients a clear has just emptied acts on nothing: not "a partial sum of the window" (transformers_tasks'
trainers clip under `accelerator.sync_gradients` after the step and its clear; two certain GL007 false alarms of
lockbox 9, found after its opening). A clip on every micro-batch of a window is still reported."""

from __future__ import annotations

from gradcheck_lint.api import check_source

AFTER_STEP = '''
import torch
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=4)
model = torch.nn.Linear(4, 1)
optim = torch.optim.AdamW(model.parameters(), lr=1e-4)
loader = [torch.randn(8, 4) for _ in range(10)]
model, optim, loader = accelerator.prepare(model, optim, loader)
for x in loader:
    with accelerator.accumulate(model):
        loss = model(x).pow(2).mean()
        accelerator.backward(loss)
        optim.step()
        optim.zero_grad()
        if accelerator.sync_gradients:
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
'''

EVERY_MICRO_BATCH = """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 8, 4)):
    (model(x).pow(2).mean() / 4).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
"""


def test_a_clip_after_the_step_and_its_clear_is_no_partial_window_clip() -> None:
    assert [d.code for d in check_source(AFTER_STEP)] == []


def test_a_clip_on_every_micro_batch_is_still_reported() -> None:
    assert [(d.code, d.line) for d in check_source(EVERY_MICRO_BATCH)] == [("GL007", 7)]
