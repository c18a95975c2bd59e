"""What a module's `forward`, read, returns beside its output that describes the input, or is an object of a class
read that holds only such things, carries no graph.

Two readings made every part of such a result a tensor with the pass's graph (so a running total of it, or a list
of such objects, was a certain GL008): a size read off a tensor (`bs, n = x.shape`, `x.shape[0]`) was nothing known,
and unpacking it gave each name "some part of a value"; and an object of a class read (AlphaSAGE's token builders,
lockbox 35) was never taken for graph-free, even when every field of it held only numbers, strings and flags. Both
gave possible findings here (certain ones where the rest of the chain was read), and a size multiplied into a loss
(`h.sum() * bs`) made its true finding rest on an opaque value."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

SCRIPT = """\
import numpy as np
import torch
import torch.nn as nn


class Tokens:
    def __init__(self, bs):
        self.bs = bs
        self.tokens = [[] for _ in range(bs)]
        self.done = False

    def add(self, picked):
        for i in range(self.bs):
            self.tokens[i].append(picked[i])

    def __add__(self, other):
        new = Tokens(self.bs + other.bs)
        new.tokens = self.tokens + other.tokens
        return new


class Masker(nn.Module):
    def forward(self, x):
        bs, n = x.shape
        h = x * 2
        blds = Tokens(bs)
        blds.add(h.detach().cpu().numpy().argmax(axis=1))
        return h, {extra}


def train(batches):
    net = nn.Linear(4, 4)
    masker = Masker()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    kept = {start}
    for x in batches:
        opt.zero_grad()
        out, extra = masker(net(x))
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        kept = kept + extra
    return kept


train([torch.randn(2, 4) for _ in range(3)])
"""


@pytest.mark.parametrize("extra, start, kept", [
    ("x.shape[0]", "0", False),
    ("n", "0", False),
    ("x.size(0) * n", "0", False),
    ("blds", "Tokens(0)", False),
    ("x.dtype", "None", False),
    # a tensor of the pass: the running total keeps its graph
    ("h.sum()", "0", True),
    ("h.sum() * bs", "0", True),
])
def test_descriptions_and_plain_objects_hold_no_graph(extra: str, start: str, kept: bool) -> None:
    found = [(d.code, d.line, d.certainty.value) for d in
             analyse_text(SCRIPT.format(extra=extra, start=start), "train.py").diagnostics]
    if kept:
        assert ("GL008", 42, "certain") in found, found
    else:  # not even as possible
        assert not [f for f in found if f[:2] == ("GL008", 42)], found
