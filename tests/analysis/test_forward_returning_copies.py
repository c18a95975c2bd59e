"""A module whose `forward`, read, returns a new tensor copied from data (`torch.tensor(...)`, `torch.from_numpy`)
returns no graph of its own pass: a CRF tagger's `forward` decodes the best tag sequence and returns
`torch.tensor(self.crf.decode(feats))`, kept in a list each batch while the loss is computed by another method
(Iven2166's NER notebooks, lockbox 23: a certain GL008 each)."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint.api import check_source

TAGGER = """
import numpy as np
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.crf = CRF(3)

    def neg_log_likelihood(self, sent, tags):
        return -self.crf(self.lin(sent), tags)

    def forward(self, sent):
        feats = self.lin(sent)
        {ret}


model = Tagger()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
predictions = []
for x, y in loader:
    opt.zero_grad()
    tags = model(x)
    loss = model.neg_log_likelihood(x, y)
    loss.backward()
    opt.step()
    predictions.append(tags)
"""


def codes(ret: str) -> list[str]:
    return [d.code for d in check_source(textwrap.dedent(TAGGER).replace("{ret}", ret))]


@pytest.mark.parametrize("ret", [
    "return torch.tensor(self.crf.decode(feats))",
    "return torch.from_numpy(np.array(self.crf.decode(feats)))",
    "return feats.argmax(-1).detach()",
])
def test_a_forward_returning_a_copy_returns_no_graph(ret: str) -> None:
    assert codes(ret) == []


@pytest.mark.parametrize("ret", [
    "return feats",
    "best = torch.tensor(self.crf.decode(feats))\n        return feats + best",
    # a total started from a copy, grown from parameters reached by name (UQpy's KL divergence of its Bayesian
    # layers, `getattr(layer, f"{name}_mu")`): what it reaches is not read, and it is no copy
    "total = torch.tensor(0.0)\n        for name in ('weight', 'bias'):\n"
    "            total += getattr(self.lin, name).pow(2).sum()\n        return total",
])
def test_a_forward_returning_its_pass_keeps_the_graph_in_the_list(ret: str) -> None:
    assert codes(ret) == ["GL008"]
