"""The last iteration of an `enumerate(xs)` loop, tested by its index against `len(xs)` (sheeprl's a2c:
`is_accumulating = i < len(sampler) - 1` ... `if not is_accumulating: optimizer.step()`): the index counts the
window `len(xs)`, the step runs once, after the last micro-batch, and the loop is left only after it. Read as a
test that may go either way on each iteration, a path stepped twice with nothing cleared between (a certain
GL001 on correct code). A step on every iteration but the last, or on the first of every epoch with nothing
cleared, is still reported."""

import ast
import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.last_iteration import index_truth
from gradcheck_lint.config import Settings

EPOCHS = """
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters())
loader = [torch.randn(2, 4) for _ in range(10)]
for epoch in range(3):
    opt.zero_grad()
    for i, x in enumerate(loader{start}):
        loss = model(x).sum() / len(loader)
        loss.backward()
        if {test}:
            opt.step()
"""

A2C = """
import torch
from torch.utils.data import BatchSampler, RandomSampler


def train(model, optimizer, data, batch_size):
    sampler = BatchSampler(RandomSampler(range(len(data))), batch_size=batch_size, drop_last=False)
    optimizer.zero_grad(set_to_none=True)
    for i, idx in enumerate(sampler):
        is_accumulating = i {op} len(sampler) - 1
        loss = model(data[idx]).sum()
        loss.backward()
        if not is_accumulating:
            optimizer.step()


model = torch.nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters())
for update in range(100):
    train(model, optimizer, torch.randn(64, 4), 16)
"""


def _gl001(text: str) -> list[int]:
    found = check_source(textwrap.dedent(text), "train.py", settings=Settings.default())
    return sorted(d.span.line for d in found if d.code == "GL001")


@pytest.mark.parametrize("test", ["i == len(loader) - 1", "len(loader) - 1 == i", "i + 1 == len(loader)",
                                  "i >= len(loader) - 1", "i + 1 >= len(loader)", "not i + 1 < len(loader)",
                                  "not i < len(loader) - 1", "len(loader) <= i + 1"])
def test_a_step_on_the_last_iteration_only(test: str) -> None:
    assert _gl001(EPOCHS.format(start="", test=test)) == []


def test_an_enumerate_from_one_ends_at_the_length() -> None:
    assert _gl001(EPOCHS.format(start=", 1", test="i == len(loader)")) == []
    assert _gl001(EPOCHS.format(start=", start=1", test="i == len(loader)")) == []


@pytest.mark.parametrize("test", ["i < len(loader) - 1", "i + 1 < len(loader)", "i != len(loader) - 1"])
def test_a_step_on_every_iteration_but_the_last_is_reported(test: str) -> None:
    assert _gl001(EPOCHS.format(start="", test=test)) == [13]


def test_a_step_on_the_first_iteration_never_cleared_is_reported() -> None:
    text = EPOCHS.format(start="", test="i == 0").replace("    opt.zero_grad()\n", "")
    assert _gl001(text) == [12]


def test_the_test_read_through_a_name() -> None:
    assert _gl001(A2C.format(op="<")) == []
    assert _gl001(A2C.format(op=">=")) == [14]  # `not (i >= W - 1)`: every iteration but the last


def test_a_range_loop_tested_with_its_bound() -> None:
    text = EPOCHS.format(start="", test="i + 1 == n").replace("enumerate(loader)", "zip(range(n), loader)")
    text = text.replace("for i, x in zip(range(n), loader):", "for i in range(n):\n        x = loader[i]")
    assert _gl001(text.replace("loader = [", "n = 10\nloader = [")) == []


@pytest.mark.parametrize(("test", "phases"), [
    ("i == W - 1", (False, False, True)), ("i + 1 == W", (False, False, True)),
    ("i < W - 1", (True, True, False)), ("i >= W - 1", (False, False, True)), ("i + 1 < W", (True, True, False)),
    ("i + 1 >= W", (False, False, True)), ("i == 0", (True, False, False)), ("i > 0", (False, True, True)),
    ("i < W", (True, True, True)), ("i == 1", (False, None, None)), ("i == W - 2", (None, None, False)),
])
def test_index_truth_by_phase(test: str, phases: tuple[bool | None, ...]) -> None:
    compare = ast.parse(test, mode="eval").body
    assert isinstance(compare, ast.Compare)
    assert tuple(index_truth(compare, "i", "W", 0, p) for p in ("first", "mid", "last")) == phases


# The same index also counting an accumulation window: the clear on each window's first micro-batch, the step on its
# last or on the loop's last (the partial window an epoch ends with), `(i + 1) % N == 0 or (i + 1) == len(loader)`
# (CS4248, lockbox 43, read after its run: a certain GL001 read false). The index counts both windows.
WINDOWED = """
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters())
loader = [torch.randn(2, 4) for _ in range(10)]
accum = 4
for epoch in range(3):
    for i, x in enumerate(loader):
        if {clear}:
            opt.zero_grad()
        loss = model(x).sum() / accum
        loss.backward()
        if {step}:
            opt.step()
"""


@pytest.mark.parametrize("step", ["(i + 1) % accum == 0 or (i + 1) == len(loader)",
                                  "(i + 1) % accum == 0 or i == len(loader) - 1",
                                  "i == len(loader) - 1 or (i + 1) % accum == 0"])
def test_a_window_flushed_on_the_last_iteration_with_the_clear_at_each_window_start(step: str) -> None:
    assert _gl001(WINDOWED.format(clear="i % accum == 0", step=step)) == []


def test_a_window_flushed_on_the_last_iteration_never_cleared_is_reported() -> None:
    assert _gl001(WINDOWED.format(clear="i < 0", step="(i + 1) % accum == 0 or (i + 1) == len(loader)")) == [15]
