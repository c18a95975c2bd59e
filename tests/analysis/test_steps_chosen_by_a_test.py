"""A step under `if use_amp: scaler.step(opt) else: opt.step()` runs on every micro-batch: the test chooses how the
optimizer steps, not whether. GL010 took any step under an `if` for a gated one and stayed silent on a loss divided
by the accumulation count with nothing accumulating (one of the causes of lockbox 15's nunif miss, development
material now). A step whose `if` leaves an arm without a step is still a gated step."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text
from support import parse_expected_findings

_HEAD = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler()
accumulation_steps = 4


def train(loader, use_amp):
    for i, x in enumerate(loader):
"""

CASES = {
    "backward_then_either_step": """\
        optimizer.zero_grad()
        loss = model(x).pow(2).mean() / accumulation_steps
        loss.backward()  # expect: GL010
        if use_amp:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
""",
    "either_arm_backward_and_step": """\
        optimizer.zero_grad()
        loss = model(x).pow(2).mean() / accumulation_steps
        if use_amp:
            scaler.scale(loss).backward()  # expect: GL010
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()  # expect: GL010
            optimizer.step()
""",
    "gated_around_either_step": """\
        loss = model(x).pow(2).mean() / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            if use_amp:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            optimizer.zero_grad()
""",
    "one_arm_steps": """\
        loss = model(x).pow(2).mean() / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
        else:
            print("accumulating")
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_test_that_chooses_how_to_step_is_no_gate(name: str) -> None:
    text = _HEAD + CASES[name]
    expected = {(line, code) for line, code, _c in parse_expected_findings(text)}
    found = {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics}
    assert found == expected
