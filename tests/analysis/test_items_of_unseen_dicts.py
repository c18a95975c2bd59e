"""An item stored into a dict made out of sight (`config = load_config(opt)`, a helper's `dict()`) is held by that
dict wherever it goes: `train_epoch(model, config, loader)` reads `config["optimizer"]` as the optimizer stored
there (iclassifier, lockbox 7: the clear of every micro-batch was not taken as a clear of that AdamW's
gradients). Other keys still read what the dict held before."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

TRAIN = """\
import torch
{helper}

def train_epoch(model, config, train_loader, opt):
    optimizer = config['optimizer']
    for local_step, (x, y) in enumerate(train_loader):
        {clear_top}
        loss = model(x) / opt.gradient_accumulation_steps
        loss.backward()
        if (local_step + 1) % opt.gradient_accumulation_steps == 0:
            optimizer.step()
            {clear_after}

def train(opt, model, train_loader):
    config = {made}
    config['optimizer'] = torch.optim.AdamW(model.parameters(), lr=config['lr'])
    for epoch_i in range(opt.epoch):
        train_epoch(model, config, train_loader, opt)
"""

MADE = [
    ("from util import load_config", "load_config(opt)"),
    ("def load_config(opt):\n    return dict()\n", "load_config(opt)"),
    ("import json", "json.load(open(opt.config))"),
]


def _found(helper: str, made: str, top: bool) -> list[tuple[str, int]]:
    text = TRAIN.format(helper=helper, made=made, clear_top="optimizer.zero_grad()" if top else "pass",
                        clear_after="pass" if top else "optimizer.zero_grad()")
    return [(d.code, d.span.line) for d in check_source(text, "train.py")]


@pytest.mark.parametrize(("helper", "made"), MADE, ids=["imported", "local-dict", "json"])
def test_an_optimizer_stored_into_a_returned_dict_reaches_the_callee(helper: str, made: str) -> None:
    found = _found(helper, made, top=True)
    text = TRAIN.format(helper=helper, made=made, clear_top="optimizer.zero_grad()", clear_after="pass")
    line = text.splitlines().index("        optimizer.zero_grad()") + 1
    assert found == [("GL002", line)]


@pytest.mark.parametrize(("helper", "made"), MADE, ids=["imported", "local-dict", "json"])
def test_the_clear_after_the_step_is_silent(helper: str, made: str) -> None:
    assert _found(helper, made, top=False) == []


def test_another_key_of_the_dict_reads_what_it_held_before() -> None:
    text = """\
import torch
from util import load_config


def train(opt, model, batches):
    config = load_config(opt)
    config['optimizer'] = torch.optim.AdamW(model.parameters())
    lr = config['lr']
    for x in batches:
        model(x).mean().backward()
        lr.zero_grad()
        config['optimizer'].step()
        config['optimizer'].zero_grad()
"""
    # `config['lr']` is not the optimizer: its `zero_grad()` is no clear of the AdamW's gradients before its step
    assert [d.code for d in check_source(text, "train.py")] == []
