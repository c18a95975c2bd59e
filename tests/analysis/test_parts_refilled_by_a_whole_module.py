"""A backward through a whole module refills the parts it holds that a clear dropped, also where the path's value of
the module does not list them.

AwareLiquid/M1 measures gradient norms in a diagnostic pass (clear, backward, read the norm, clear) before each real
step (clear, backward, step). Its model holds blocks built by other constructor calls (separate objects, stored on it).
On some paths the model's value listed those blocks, on others not (its constructor read in one call context and not
in another), so the measurement's clear dropped the blocks' gradients and the real step's backward, through the same
model, was taken to write only the model's own: "the step sees no gradient" (lockbox 39, five certain false GL002,
kind 4). Now the objects a module was seen to hold are its parts (`EntityTable.parts`), and a backward through the
whole module writes them again for the clear's records. A backward through one part of the model only (its head)
refills nothing else."""

from __future__ import annotations

from gradcheck_lint.analysis.gradstate import PathState
from gradcheck_lint.analysis.values import Holder
from gradcheck_lint.engine import analyse_text

SOURCE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        for block in getattr(self, "blocks", []):
            x = block(x)
        return self.head(x)


model = Net()
runner = model  # the same object, under another name taken before its blocks are attached
model.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(20):
    x = torch.randn(2, 4)
    if i % 10 == 0:
        model.zero_grad()
        model(x).pow(2).mean().backward()
        norm = sum(float(p.grad.norm()) for p in model.parameters())
        model.zero_grad()
    opt.zero_grad()
    loss = RUN.pow(2).mean()
    loss.backward()
    opt.step()
"""


def _codes(text: str) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics]


def test_a_measurement_pass_before_the_step_through_the_whole_model() -> None:
    assert _codes(SOURCE.replace("RUN", "runner(x)")) == []


def test_a_step_through_one_part_only_still_loses_the_others() -> None:
    text = SOURCE.replace("RUN", "runner.head(x)")
    assert ("GL002", text.splitlines().index("        model.zero_grad()", 24) + 1) in _codes(text)


def test_the_state_refills_a_part_only_when_told() -> None:
    part, whole = Holder(2, ()), Holder(1, ())
    state = PathState().backward(1, {whole: True, part: True}).clear(2, [whole, part])
    assert {d.holder for d in state.discards} == {whole, part}
    plain = state.backward(3, {whole: True})
    assert {d.holder for d in plain.discards if not d.refilled} == {part}
    refilled = state.backward(3, {whole: True}, frozenset({part}))
    assert all(d.refilled and not d.refilled_same for d in refilled.discards)
