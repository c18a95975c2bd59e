"""A method of a module whose code is not read (inherited from a class out of sight, or called on a model of
one of several classes) is taken to hand on the graphs of what it is given. A stale graph that reaches a
backward only that way rests on that assumption: GL009 is `possible` (Quantum-Hybrid-PINN's
`compute_residuals` returns `.item()` floats as its scales). Reached through code read, it stays certain."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

RESIDUALS = """
import torch
import torch.nn as nn
from physics_lib import ResidualMixin


class Net(ResidualMixin, nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


def train(x, epochs):
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    out = model(x)
    scales = {scales}
    for epoch in range(epochs):
        optimizer.zero_grad()
        pred = model(x)
        res = {residual}
        loss = (res ** 2).mean()
        loss.backward()
        optimizer.step()
"""


def _gl009(scales: str, residual: str) -> list[tuple[int, str]]:
    source = textwrap.dedent(RESIDUALS.format(scales=scales, residual=residual))
    found = check_source(source, "train.py", settings=Settings.default())
    return [(d.span.line, d.certainty.name) for d in found if d.code == "GL009"]


def test_a_stale_graph_handed_on_only_by_a_method_not_read_is_possible() -> None:
    assert _gl009("model.compute_residuals(x, out, scale_dict=None)[1]",
                  "model.compute_residuals(x, pred, scale_dict=scales)") == [(26, "POSSIBLE")]


def test_a_stale_graph_reaching_the_loss_through_code_read_stays_certain() -> None:
    # the same stale output divided in sight, and beside it the unread method's result: a certain witness
    assert _gl009("out.std()", "model.compute_residuals(x, pred) / scales") == [(26, "CERTAIN")]
    assert _gl009("model.compute_residuals(x, out) + out.std()",
                  "pred / scales") == [(26, "CERTAIN")]


def test_a_fresh_forward_through_a_method_not_read_is_no_finding() -> None:
    assert _gl009("out.std().item()", "model.compute_residuals(x, pred, scale_dict=scales)") == []
