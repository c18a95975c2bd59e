"""Anchors of window phases (`analysis/anchors.py`): a clear at the residue of a window's first micro-batch
and a step at the residue of its last are one window, wherever the counter starts (0 or 1, incremented before
or after the tests, `enumerate(loader, 1)`, Ignite's 1-based `engine.state.iteration`); a clear at any other
residue still discards micro-batches."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.anchors import choose
from gradcheck_lint.analysis.window_arithmetic import FIRST, LAST, MID, phase_truth

HEAD = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
n = 4
loader = [torch.randn(2, 4)] * 16
"""

BEFORE = """\
step = {init}
for epoch in range(3):
    for x in loader:
        step += 1
        if {clear}:
            optimizer.zero_grad()
        (model(x).pow(2).mean() / n).backward()
        if {step}:
            optimizer.step()
"""
AFTER = """\
step = {init}
for x in loader:
    if {clear}:
        optimizer.zero_grad()
    (model(x).pow(2).mean() / n).backward()
    if {step}:
        optimizer.step()
    step += 1
"""
ENUMERATE = """\
for i, x in enumerate(loader{start}):
    if {clear}:
        optimizer.zero_grad()
    (model(x).pow(2).mean() / n).backward()
    if {step}:
        optimizer.step()
"""


def _codes(body: str) -> list[str]:
    return sorted(d.code for d in check_source(HEAD + body))


@pytest.mark.parametrize(
    ("body", "codes"),
    [
        # from 0, incremented before the tests: 1 on the first micro-batch, windows 1..n, n+1..2n
        (BEFORE.format(init=0, clear="step % n == 1", step="step % n == 0"), []),
        # ... a clear on the window's second micro-batch, or on its last before the backward: discards
        (BEFORE.format(init=0, clear="step % n == 2", step="step % n == 0"), ["GL001", "GL002"]),
        (BEFORE.format(init=0, clear="step % n == 0", step="step % n == 0"), ["GL002"]),
        # from 1, incremented after the tests: the same windows
        (AFTER.format(init=1, clear="step % n == 1", step="step % n == 0"), []),
        # from 0, incremented after: the step on the first micro-batch (GL004), the clear right after it
        (AFTER.format(init=0, clear="step % n == 1", step="step % n == 0"), ["GL004"]),
        # ... with the step on each window's last micro-batch, the clear drops that window's first one
        (AFTER.format(init=0, clear="step % n == 1", step="(step + 1) % n == 0"), ["GL001", "GL002"]),
        (ENUMERATE.format(start=", 1", clear="i % n == 1", step="i % n == 0"), []),
        (ENUMERATE.format(start="", clear="i % n == 1", step="(i + 1) % n == 0"), ["GL001", "GL002"]),
    ],
    ids=["before-1-0", "before-2-0", "before-0-0", "after-from-1", "after-from-0", "after-from-0-last",
         "enumerate-1", "enumerate-0-last"],
)
def test_a_clear_and_a_step_at_residues_of_one_window(body: str, codes: list[str]) -> None:
    assert _codes(body) == codes


IGNITE = """\
import torch
from ignite.engine import Engine

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
N = 4


def train(engine, batch):
    if {clear}:
        {guard}optimizer.zero_grad()
    loss = model(batch).pow(2).mean() / N
    loss.backward()
    if engine.state.iteration % N == 0 and engine.state.iteration > 0:
        optimizer.step()
    return loss.item()


trainer = Engine(train)
trainer.run([torch.randn(2, 4)] * 16, max_epochs=2)
"""


@pytest.mark.parametrize(
    ("clear", "guard", "codes"),
    [
        # kh-kim/simple-nmt: Ignite's iteration is 1 on the first call, so residue 1 is a window's first
        ("engine.state.iteration % N == 1 or N == 1", "if engine.state.iteration > 1:\n            ", []),
        ("engine.state.iteration % N == 1 or N == 1", "", []),
        ("engine.state.iteration % N == 0", "", ["GL002"]),  # the clear before the last backward of each window
    ],
    ids=["simple-nmt", "first-residue", "last-residue"],
)
def test_ignites_one_based_iteration(clear: str, guard: str, codes: list[str]) -> None:
    assert sorted(d.code for d in check_source(IGNITE.format(clear=clear, guard=guard))) == codes


@pytest.mark.parametrize(
    ("offsets", "first", "anchor"),
    [
        (frozenset({1, 0}), 0, 1),  # `step % n == 1` and `step % n == 0`: windows start at residue 1
        (frozenset({0, -1}), 0, 0),  # `i % n == 0` and `(i + 1) % n == 0`: at the first value
        (frozenset({0}), 0, 0),
        (frozenset({1}), 0, 1),
        (frozenset({2, 0}), 0, 0),  # no anchor makes both a first or a last position: the first value
        (frozenset(), 1, 1),
    ],
)
def test_the_anchor_the_residues_choose(offsets: frozenset[int], first: int, anchor: int) -> None:
    assert choose(offsets, first) == anchor


@pytest.mark.parametrize(
    ("test", "start", "truths"),
    [
        ("x % N == 1", 1, (True, False, False)),
        ("x % N == 0", 1, (False, False, True)),
        ("x % N == 1", 0, (None, None, None)),  # the second micro-batch: the last one when N is 2
        ("x % N == N - 1", 0, (False, False, True)),
        ("(x + 1) % N == 2", 1, (True, False, False)),
        ("x % N == 1 or N == 1", 1, (True, False, False)),
    ],
)
def test_residue_phases(test: str, start: int, truths: tuple[bool | None, ...]) -> None:
    expr = ast.parse(test, mode="eval").body
    assert tuple(phase_truth(expr, "x", "N", p, start) for p in (FIRST, MID, LAST)) == truths


def test_a_loop_counter_floor_decides_comparisons_below_it() -> None:
    expr = ast.parse("x % N == 0 and x > 0", mode="eval").body
    assert phase_truth(expr, "x", "N", LAST, 1, floor=1) is True
    assert phase_truth(expr, "x", "N", LAST, 1) is None
