"""A method row of the catalogue may list every keyword the method takes (`accepts`): a call with another one
raises TypeError, and the path through it ends. PyTorch 0.3's `loss.backward(retain_variables=True)` is no
call of `Tensor.backward` since 0.4; Kind-PyTorch-Tutorial's GANs reached a certain GL009 past it, on code
that cannot run (four false alarms of lockbox 19, after its opening)."""

from __future__ import annotations

import pytest

from gradcheck_lint.analysis.apimodels.schema import ModelError, parse_model_file
from gradcheck_lint.engine import analyse_text

GAN = """\
import torch
from torch import nn


def train(loader):
    G = nn.Linear(4, 4)
    D = nn.Linear(4, 1)
    g_opt = torch.optim.Adam(G.parameters())
    d_opt = torch.optim.Adam(D.parameters())
    for z in loader:
        g_opt.zero_grad()
        d_fake = D(G(z))
        g_loss = -d_fake.mean()
        g_loss.backward({keyword}=True)
        g_opt.step()
        d_opt.zero_grad()
        d_loss = d_fake.mean()
        d_loss.backward()
        d_opt.step()
"""


@pytest.mark.parametrize(("keyword", "gl009"), [("retain_graph", True), ("retain_variables", False)])
def test_a_keyword_backward_does_not_take_ends_the_path(keyword: str, gl009: bool) -> None:
    found = [d for d in analyse_text(GAN.format(keyword=keyword), "train.py").diagnostics if d.code == "GL009"]
    assert bool(found) is gl009


def test_the_accepted_keywords_are_a_list_of_names() -> None:
    row = {"type": "mylab.Engine", "name": "backward", "effect": {"effect": "backward", "loss": "0|loss"}}
    parsed = parse_model_file({"method": [{**row, "accepts": ["loss", "retain_graph"]}]}, "m.toml")
    assert parsed.methods[0].accepts == ("loss", "retain_graph")
    assert parse_model_file({"method": [row]}, "m.toml").methods[0].accepts is None  # not listed: not checked
    with pytest.raises(ModelError, match="accepts"):
        parse_model_file({"method": [{**row, "accepts": "loss"}]}, "m.toml")
