"""A call a function read in code cannot accept raises `TypeError` before the body runs, and ends its path
(`call_signatures`): AdvancedLiterateMachinery's VQGAN trainer calls `self.vae(img, return_loss=True,
apply_grad_penalty=...)` on a `forward` that takes `add_gradient_penalty`, so the leak below it cannot happen
(a certain GL005 there was false, lockbox 18). A signature that may take the call (`**kwargs`, `*args`, a
decorator that may wrap it, arguments handed on with `**`) decides nothing."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

GAN = """\
import functools
import torch
from torch import nn


def logged(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        return fn(*args, **kwargs)
    return run


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.discr = nn.Linear(4, 1)

    {decorator}
    def forward(self, img, return_loss=False, return_discr_loss=False, add_gradient_penalty=True{more}):
        fmap = self.enc(img)
        if return_discr_loss:
            return self.discr(fmap.detach()).mean()
        return fmap.mean() + self.discr(fmap).mean()


def train(loader, opts):
    vae = VAE()
    optim = torch.optim.Adam(vae.enc.parameters())
    discr_optim = torch.optim.Adam(vae.discr.parameters())
    for img in loader:
        loss = vae({call})
        loss.backward()
        optim.step()
        optim.zero_grad()
        loss = vae(img, return_discr_loss=True)
        loss.backward()
        discr_optim.step()
        discr_optim.zero_grad()
"""


@pytest.mark.parametrize(("call", "more", "decorator", "gl005"), [
    ("img, return_loss=True, add_gradient_penalty=False", "", "", True),
    ("img, return_loss=True, apply_grad_penalty=False", "", "", False),  # no such parameter: TypeError
    ("img, True, False, True, 4", "", "", False),  # five arguments for four parameters
    ("img, return_loss=True, apply_grad_penalty=False", ", **kwargs", "", True),
    ("img, True, False, True, 4", ", *rest", "", True),
    ("img, return_loss=True, apply_grad_penalty=False", "", "@logged", True),  # a wrapper may take it
    ("img, return_loss=True, **opts", "", "", True),  # what `opts` holds is not in sight
])
def test_a_forward_that_cannot_take_the_call(call: str, more: str, decorator: str, gl005: bool) -> None:
    text = GAN.format(call=call, more=more, decorator=decorator)
    found = [d for d in analyse_text(text, "train.py").diagnostics if d.code == "GL005"]
    assert bool(found) is gl005


LOOP = """\
import torch


def compute(model, x, scale=1.0):
    return model(x).mean() * scale


def train(model, loader):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        loss = compute(model, x, {keyword}=0.5)
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize(("keyword", "gl001"), [("scale", True), ("weight", False)])
def test_a_function_called_with_a_keyword_it_does_not_take(keyword: str, gl001: bool) -> None:
    found = {d.code for d in analyse_text(LOOP.format(keyword=keyword), "train.py").diagnostics}
    assert ("GL001" in found) is gl001


# A call that leaves a parameter without a default unfilled raises `TypeError` too, a constructor's as well:
# JEN-1's `train.py` builds its trainer on ranks other than 0 without the `epoch_str` and `global_step` that
# `__init__` requires (lockbox 37). And a branch whose last statement so ends every path binds nothing for the
# code after it: what that branch would have built was read after the `if` before.
CRITERION = """\
import torch


class Criterion:
    def __init__(self, weight, smoothing=0.0, *, reduction):
        self.weight = weight
        self.reduction = reduction

    def __call__(self, out):
        return out.mean() * self.weight


def train(model, loader, rank, opts):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    {build}
    for x in loader:
        loss = crit(model(x))
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize(("build", "gl001"), [
    ("crit = Criterion(1.0, reduction='mean')", True),
    ("crit = Criterion(weight=1.0, reduction='mean')", True),
    ("crit = Criterion(1.0, 0.1, reduction='mean')", True),
    ("crit = Criterion(reduction='mean')", False),  # no `weight`
    ("crit = Criterion(1.0)", False),  # no keyword-only `reduction`
    ("crit = Criterion(smoothing=0.1, reduction='mean')", False),
    ("crit = Criterion(**opts)", True),  # what `opts` holds is not in sight
    ("crit = Criterion(*opts, reduction='mean')", True),
    # one branch builds it right: that branch trains
    ("if rank == 0:\n        crit = Criterion(1.0, reduction='mean')\n    else:\n        crit = Criterion(reduction='mean')", True),
    # the only branch that builds one raises there: `crit` is None after the `if`, and the function returns
    ("crit = None\n    if rank != 0:\n        crit = Criterion(reduction='mean')\n    if crit is None:\n        return", False),
    ("crit = None\n    if rank != 0:\n        crit = Criterion(1.0, reduction='mean')\n    if crit is None:\n        return", True),
])
def test_a_constructor_called_without_a_required_argument_ends_its_path(build: str, gl001: bool) -> None:
    found = {d.code for d in analyse_text(CRITERION.format(build=build), "train.py").diagnostics}
    assert ("GL001" in found) is gl001, found


@pytest.mark.parametrize(("call", "gl001"), [("compute(model, x)", True), ("compute(model)", False),
                                             ("compute(x=x, model=model)", True)])
def test_a_function_called_without_a_required_argument(call: str, gl001: bool) -> None:
    text = LOOP.replace("compute(model, x, {keyword}=0.5)", call)
    found = {d.code for d in analyse_text(text, "train.py").diagnostics}
    assert ("GL001" in found) is gl001
