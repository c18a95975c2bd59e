"""Truncated backpropagation through time (ar-pde-cnn, lockbox 13 after its opening): the model's next input is
grown from its own output with the graph (`input = torch.cat([input, out], dim=1)`), backpropagated every few
steps and then cut (`input = input[:, -k:].detach()`). The graphs it holds are one window's, used and freed by that
window's backward: no GL008. A running value never cut keeps every step's graph, as before."""

from __future__ import annotations

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

PROGRAM = """\
import torch
from torch import nn

model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    state = torch.randn(4, 3)
    loss = 0
    for i in range(20):
        pred = model(state[:, -3:])
        loss = loss + pred.pow(2).mean()
        if (i + 1) % 4 == 0:
            loss.backward()
            loss = 0
            optimizer.step()
            optimizer.zero_grad()
            state = {cut}
        else:
            state = torch.cat([state, pred], dim=1)
"""


def _found(text: str) -> set[tuple[int, str]]:
    report = analyse_text(text, "t.py", Settings.default().with_enabled(frozenset({"GL008"})))
    return {(d.line, d.code) for d in report.diagnostics}


def test_a_state_cut_from_its_graph_at_each_window_keeps_one_window() -> None:
    assert _found(PROGRAM.format(cut="state[:, -3:].detach()")) == set()
    assert _found(PROGRAM.format(cut="state[:, -3:].detach().clone()")) == set()


def test_a_state_never_cut_keeps_every_steps_graph() -> None:
    assert (19, "GL008") in _found(PROGRAM.format(cut="torch.cat([state, pred], dim=1)"))
