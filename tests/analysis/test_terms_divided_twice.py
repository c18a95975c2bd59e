"""The operands of a sum are terms of one loss, not paths: a term divided by the window twice counts 1/N² against
the others' 1/N however they were divided (DiT-PyTorch's VAE: `lpips_loss = mean(...) / acc_steps`, then
`g_loss += w * lpips_loss / acc_steps` beside terms divided once)."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint.api import check_source

LOOP = """
import torch
from torch import nn

model = nn.Linear(4, 4)
perceptual = nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters())
acc_steps = 4
step_count = 0
for x, y in loader:
    out = model(x)
    recon = nn.functional.mse_loss(out, y) / acc_steps
    lpips_loss = torch.mean(perceptual(out)) / acc_steps
{loss}
    g_loss.backward()
    step_count += 1
    if step_count % acc_steps == 0:
        opt.step()
        opt.zero_grad()
"""


def findings(loss: str) -> list[tuple[str, str]]:
    src = textwrap.dedent(LOOP).replace("{loss}", textwrap.indent(textwrap.dedent(loss).strip(), "    "))
    return [(d.code, d.message) for d in check_source(src)]


@pytest.mark.parametrize("loss", [
    "g_loss = recon + 0.5 * lpips_loss / acc_steps",
    "g_loss = recon\ng_loss += 0.5 * lpips_loss / acc_steps",
    "g_loss = recon + (lpips_loss / acc_steps) * 0.5",
])
def test_a_term_divided_twice_beside_terms_divided_once_is_reported(loss: str) -> None:
    found = findings(loss)
    assert [c for c, _ in found] == ["GL003"]
    assert "(or one of its terms) is divided by `acc_steps` twice" in found[0][1]


@pytest.mark.parametrize("loss", [
    "g_loss = recon + 0.5 * lpips_loss",
    "g_loss = recon\ng_loss += 0.5 * lpips_loss",
    "g_loss = torch.stack([recon, lpips_loss]).sum()",
])
def test_terms_each_divided_once_are_silent(loss: str) -> None:
    assert findings(loss) == []


def test_a_number_divided_twice_added_to_the_loss_is_no_term_of_its_gradient() -> None:
    """`(n / acc_steps) / acc_steps` holds no graph: the loss's gradient is divided once."""
    assert findings("scale = (8.0 / acc_steps) / acc_steps\ng_loss = recon + lpips_loss + scale") == []
