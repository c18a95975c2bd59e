"""A method of the model that hands back what it made (`analysis/fresh_returns.py`): a tensor its caller then writes
into in place holds that call's graph only (Pyraformer's ProbSparse attention, lockbox 30: a certain GL008 on a
context built by `.clone()` at each forward); one that hands back a tensor it keeps still outlives the loop."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

ATTENTION = """\
import torch
from torch import nn, optim


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Linear(d, d)
        self.buffer = torch.zeros(4, 5, d)

    def _initial_context(self, v):
{initial}

    def _update_context(self, context_in, v, index):
        context_in[:, index, :] = torch.softmax(v, dim=-1)[:, index, :].type_as(context_in)
        return context_in

    def forward(self, x):
        v = self.w(x)
        context = self._initial_context(v)
        context = self._update_context(context, v, torch.tensor([0, 2]))
        return context.contiguous()


layer = Attention(8)
optimizer = optim.Adam(layer.parameters(), 1e-4)
hidden = torch.ones(4, 5, 8)
for i in range(100):
    result = layer(hidden)
    loss = result.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

FRESH = {
    "clone": "        context = v.mean(dim=-2).unsqueeze(-2).expand(v.shape).clone()\n        return context",
    "factory": "        return torch.zeros_like(v)",
    "new_zeros": "        out = v.new_zeros(v.shape)\n        return out",
}
KEPT = {
    "attribute": "        return self.buffer",
    "argument": "        return v",
    "one_arm": "        if v.dim() > 3:\n            return v.clone()\n        return self.buffer",
}


def codes(initial: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(ATTENTION.format(initial=initial))]


def write_line(initial: str) -> int:
    """The line of the in-place write into the context."""
    return next(i for i, line in enumerate(ATTENTION.format(initial=initial).splitlines(), 1) if "context_in[:" in line)


@pytest.mark.parametrize("initial", FRESH.values(), ids=FRESH.keys())
def test_a_tensor_the_method_makes_at_each_call_holds_one_calls_graph(initial: str) -> None:
    assert codes(initial) == []


@pytest.mark.parametrize("initial", KEPT.values(), ids=KEPT.keys())
def test_a_tensor_the_method_keeps_or_was_handed_still_outlives_the_loop(initial: str) -> None:
    assert (write_line(initial), "GL008") in codes(initial)
