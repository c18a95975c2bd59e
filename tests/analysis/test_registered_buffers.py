"""A buffer is a tensor of the module, not a part whose forward runs: `self.register_buffer("inv_timescales", t)` binds
`self.inv_timescales` as `self.inv_timescales = t` does, and a tensor stored by `__init__` is read as what was stored.
A position table made of `arange`, `exp` and that buffer holds no graph (SCINet's `x += pe` inside its forward, a certain
GL008 of lockbox 9, found after its opening: it does not count on it). A parameter of the module still carries one."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


NET = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        STORE

    def forward(self, x):
        return self.proj(x * self.inv_timescales)


def train(loader):
    model = Net(8)
    opt = torch.optim.Adam(model.parameters())
    total = 0.0
    for inputs, target in loader:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), target)
        loss.backward()
        opt.step()
        total += KEPT.sum()
    return total
"""
BUFFER = 'self.register_buffer("inv_timescales", torch.exp(-torch.arange(dim, dtype=torch.float32)))'
PLAIN = "self.inv_timescales = torch.exp(-torch.arange(dim, dtype=torch.float32))"


def test_a_buffer_summed_each_iteration_keeps_no_graph() -> None:
    for store in (BUFFER, PLAIN):
        assert found(NET.replace("STORE", store).replace("KEPT", "model.inv_timescales")) == [], store


def test_a_parameter_summed_each_iteration_still_keeps_its_graph() -> None:
    """(`possible`: a tensor method on a part of the model is a call the analysis does not read.)"""
    assert found(NET.replace("STORE", BUFFER).replace("KEPT", "model.proj.weight")) == [("GL008", 24, "possible")]


def test_a_module_stored_by_init_is_still_a_part_of_the_model() -> None:
    """`self.scale_net = nn.Linear(...)`: calling it is a forward of that part, whose output carries the graph."""
    text = NET.replace("STORE", BUFFER + "\n        self.scale_net = nn.Linear(dim, 1)").replace(
        "KEPT.sum()", "model.scale_net(inputs).sum()")
    assert ("GL008", 25, "certain") in found(text)
