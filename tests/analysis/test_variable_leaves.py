"""`Variable(x)` makes a tensor cut from `x`'s graph that requires a gradient only when given `requires_grad=True`
(the default is False, also in the PyTorch releases that still had Variables): only then does a backward write a
gradient into it that a step applies and nothing clears."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint.api import check_source

SCRIPT = """
import torch
from torch.autograd import Variable

content = torch.randn(1, 3, 8, 8)
net = torch.nn.Conv2d(3, 3, 3)
img = Variable(content.clone(){requires})
opt = torch.optim.Adam([img] + list(net.parameters()), lr=0.1)
for it in range(100):
    net.zero_grad()
    loss = ((net(img) - content[..., 1:-1, 1:-1]) ** 2).mean()
    loss.backward()
    opt.step()
"""


def codes(requires: str) -> list[str]:
    return [d.code for d in check_source(textwrap.dedent(SCRIPT).replace("{requires}", requires))]


@pytest.mark.parametrize("requires", ["", ", requires_grad=False"])
def test_a_variable_that_requires_no_gradient_holds_none_to_clear(requires: str) -> None:
    assert codes(requires) == []


def test_a_variable_that_requires_a_gradient_is_a_leaf_the_step_applies_uncleared() -> None:
    assert codes(", requires_grad=True") == ["GL001"]
