"""GL007 beyond clips: a gradient norm read, or the gradients changed other than by a factor, while a
GradScaler still scales them (issue 13's "log or modify before `unscale_`"; an audit found them silent)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler()
for x in torch.randn(8, 2, 4):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    scaler.scale(loss).backward()
    {before}
    {line}
    scaler.step(opt)
    scaler.update()
"""


def gl007(line: str, before: str = "pass") -> list[int]:
    text = LOOP.format(line=line, before=before)
    return [d.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL007"]


@pytest.mark.parametrize("line", [
    "norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])",
    "print(torch.stack([p.grad.norm() for p in model.parameters()]).norm())",
    "for p in model.parameters(): p.grad += 0.01 * torch.randn_like(p.grad)",
    "for p in model.parameters(): p.grad.add_(torch.randn_like(p.grad))",
    "for p in model.parameters(): p.grad.data.clamp_(-1, 1)",
])
def test_a_norm_read_or_a_change_of_scaled_gradients_is_gl007(line: str) -> None:
    assert gl007(line) == [10]


@pytest.mark.parametrize("line, before", [
    ("norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])", "scaler.unscale_(opt)"),
    ("for p in model.parameters(): p.grad += 0.01 * torch.randn_like(p.grad)", "scaler.unscale_(opt)"),
    ("for p in model.parameters(): p.grad.mul_(0.5)", "pass"),  # a factor commutes with the unscaling
    ("for p in model.parameters(): p.grad /= 2", "pass"),
    ("norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()]) / scaler.get_scale()", "pass"),
])
def test_reads_and_factors_that_the_scale_does_not_falsify_are_silent(line: str, before: str) -> None:
    assert gl007(line, before) == []


def test_a_norm_of_another_models_gradients_is_not_this_optimizers() -> None:
    text = LOOP.format(before="other = torch.nn.Linear(4, 1)", line="n = torch.nn.utils.get_total_norm([p.grad for p in other.parameters()])")
    assert [d.code for d in analyse_text(text, "train.py").diagnostics] == []
