"""`accelerator.accumulate(model)` switches the model's gradient sync off only on the micro-batches that do not step
(those that do not end a window). An Accelerator built with no `gradient_accumulation_steps` (nor set after, nor given
by a plugin) has windows of one: every micro-batch steps and nothing is ever switched off, so a forward run before
`accumulate()` all-reduces as it should (RIR-DM, lockbox 43: three certain GL006 read false; vits-accelerate, lockbox
44). `accelerate launch --gradient_accumulation_steps N` gives the Accelerator a window only for DeepSpeed, which has
no DDP wrapper. With a window, the forward outside `accumulate()` is still reported."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import check_source

SCRIPT = """
import torch
from accelerate import Accelerator


def main(loader):
    accelerator = Accelerator({window})
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for x in loader:
        loss = model(x).pow(2).mean()
        with accelerator.accumulate(model):
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    main([torch.randn(2, 4)] * 8)
"""


@pytest.mark.parametrize(("window", "expected"), [
    ('mixed_precision="fp16"', []),  # no window: one micro-batch each
    ("gradient_accumulation_steps=1", []),
    ("gradient_accumulation_steps=4", [(14, "GL006")]),  # the forward before `accumulate()` syncs for nothing
])
def test_accumulate_of_a_window_of_one_switches_nothing_off(window: str, expected: list[tuple[int, str]]) -> None:
    found = check_source(textwrap.dedent(SCRIPT.format(window=window)), "train.py")
    assert [(d.line, d.code) for d in found if d.code == "GL006"] == expected


def test_a_window_set_after_construction_counts() -> None:
    text = SCRIPT.format(window="").replace("    model = torch.nn.Linear(4, 1)\n",
                                            "    accelerator.gradient_accumulation_steps = 4\n"
                                            "    model = torch.nn.Linear(4, 1)\n")
    found = check_source(textwrap.dedent(text), "train.py")
    assert [(d.line, d.code) for d in found if d.code == "GL006"] == [(15, "GL006")]
