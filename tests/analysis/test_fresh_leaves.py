"""A tensor made a leaf that requires grad where the code runs (`torch.randn(..., requires_grad=True)`,
`x = y.detach().clone(); x.requires_grad = True`) is a new tensor on every run of that code: it holds no
gradient yet. Input-optimization loops (class visualization, adversarial examples, diffusers'
pix2pix-zero latents) build one per iteration and step it once, without clearing: that is right."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def codes(text: str) -> set[str]:
    return {d.code for d in analyse_text(text, "opt.py").diagnostics}


LOOP = """\
import torch

unet = torch.nn.Linear(4, 4)
latents = torch.randn(2, 4)
{before}
for t in range(10):
{make}
    opt = torch.optim.SGD([x_in], lr=0.1)
    loss = unet(x_in).pow(2).sum()
    loss.backward()
    opt.step()
    latents = x_in.detach()
"""

NEW_EACH_ITERATION = [
    "    x_in = latents.detach().clone()\n    x_in.requires_grad = True",
    "    x_in = latents.detach().clone().requires_grad_(True)",
    "    x_in = torch.randn(2, 4, requires_grad=True)",
    "    x_in = torch.autograd.Variable(latents.clone(), requires_grad=True)",
]


@pytest.mark.parametrize("make", NEW_EACH_ITERATION)
def test_a_leaf_made_in_each_iteration_starts_without_gradient(make: str) -> None:
    assert "GL001" not in codes(LOOP.format(before="", make=make))


@pytest.mark.parametrize("make", NEW_EACH_ITERATION)
def test_a_leaf_made_once_and_stepped_in_every_iteration_accumulates(make: str) -> None:
    # the same lines before the loop: one tensor, never cleared, its gradients pile up
    text = LOOP.format(before=make.replace("    ", ""), make="    pass")
    assert "GL001" in codes(text)


def test_a_leaf_made_once_and_reflagged_in_every_iteration_accumulates() -> None:
    text = LOOP.format(before="x_in = latents.clone()", make="    x_in.requires_grad = True")
    assert "GL001" in codes(text)
