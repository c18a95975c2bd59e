"""Where a window counter starts decides whether a step gate fires on a window's first micro-batch
(`analysis/counters.py`, `analysis/expressions.py`): a batch count kept across epochs,
`len(loader) * epoch + i`, counts like `i` only when the first epoch is number 0; a name bound to a loop
counter plus an offset (`analysis/counter_aliases.py`) keeps the counter's phases."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [torch.randn(3, 4) for _ in range(6)]
N = 3
for epoch in {epochs}:
    for i, x in enumerate(loader):
        batches_done = len(loader) * epoch + i
        loss = model(x).pow(2).mean() / N
        loss.backward()
        if batches_done % N == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def codes(text: str) -> set[tuple[int, str]]:
    return {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics}


def test_a_batch_count_from_epoch_zero_steps_on_the_first_micro_batch() -> None:
    assert (13, "GL004") in codes(LOOP.format(epochs="range(2)"))


@pytest.mark.parametrize("epochs", ["range(1, 3)", "range(1, args_epochs + 1)"])
def test_a_batch_count_from_epoch_one_starts_at_the_loader_length(epochs: str) -> None:
    # The first micro-batch is number len(loader): whether it ends a window depends on the loader's
    # length, which the rule does not judge (PyTorch-YOLOv3's pytorchyolo/train.py, a sweep false alarm).
    assert not any(code == "GL004" for _, code in codes(LOOP.format(epochs=epochs).replace("args_epochs", "2")))


def test_an_epoch_of_unknown_origin_still_counts_from_zero() -> None:
    text = LOOP.format(epochs="range(start_epoch, 3)").replace("N = 3\n", "N = 3\nstart_epoch = int(input())\n")
    assert any(code == "GL004" for _, code in codes(text))


GENERATOR_LOOP = """\
import torch
from torch import nn

GENER_ITERS = {iters}
G = nn.Linear(4, 4)
opt_g = torch.optim.Adam(G.parameters())
for iteration in range(100):
    for i in range(GENER_ITERS):
        G.zero_grad()
        loss = G(torch.randn(2, 4)).pow(2).mean()
        loss.backward()
    opt_g.step()
"""


def test_a_loop_bounded_by_the_module_constant_one_runs_once() -> None:
    # improved-wgan-pytorch's generator loop: with GENER_ITERS = 1 the clear never drops a backward
    assert codes(GENERATOR_LOOP.format(iters=1)) == set()


@pytest.mark.parametrize("iters", ["2", "int(input())"])
def test_a_loop_that_may_run_twice_still_loses_the_first_backward(iters: str) -> None:
    assert (9, "GL002") in codes(GENERATOR_LOOP.format(iters=iters))


def test_a_constant_rebound_elsewhere_is_no_constant() -> None:
    text = GENERATOR_LOOP.format(iters=1).replace("for iteration in range(100):\n", "for iteration in range(100):\n    GENER_ITERS = 1 + iteration % 2\n")
    assert any(code == "GL002" for _line, code in codes(text))


SIZE_ARMS = """\
import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
N = int(input())
for idx, x in enumerate([torch.randn(3, 4) for _ in range(6)]):
    if {test}:
        loss = model(x).pow(2).mean() / N
        loss.backward()
        if (idx + 1) % N == 0:
            optimizer.step()
            optimizer.zero_grad()
    else:
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        if {gate}:
            optimizer.step()
"""


@pytest.mark.parametrize("test", ["N > 1", "N != 1", "1 < N", "not N <= 1"])
@pytest.mark.parametrize("gate", ["(idx + 1) % N == 0", "idx % N == 0", "not (idx + 1) % N", "(idx + 1) % N == 0 or idx == 5"])
def test_in_the_arm_where_the_window_is_one_every_modulo_gate_holds(test: str, gate: str) -> None:
    # InternImage's classification/main.py: the `else:` of `if ACCUMULATION_STEPS > 1:` clears before
    # every backward and steps under the accumulating arm's gate, which there always holds
    assert codes(SIZE_ARMS.format(test=test, gate=gate)) == set()


def test_a_gate_on_another_window_still_drops_gradients() -> None:
    # only `N` is known to be 1 in the `else:` arm: a window of another name may be larger
    text = SIZE_ARMS.format(test="N > 1", gate="(idx + 1) % M == 0").replace("N = int(input())\n", "N = int(input())\nM = int(input())\n")
    assert (16, "GL002") in codes(text)


def test_the_window_is_not_known_to_be_one_in_the_accumulating_arm() -> None:
    text = SIZE_ARMS.format(test="N > 1", gate="(idx + 1) % N == 0").replace(
        "        loss.backward()\n", "        optimizer.zero_grad()\n        loss.backward()\n", 1)
    assert (10, "GL002") in codes(text)


# A counter that restarts every N values (`zip(loader, cycle(range(1, N + 1)))`, FastPitch): `k == 1` is the
# first micro-batch of every window, not of the first only. Read as a test of no known counter, a path
# that stepped at `k % N == 0` could skip the clear at the next `k == 1`: a certain false GL001.
CYCLE = """\
from itertools import cycle

import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [torch.randn(3, 4) for _ in range(12)]
accumulation = 4
for epoch in range(3):
    for x, k in zip(loader, cycle(range({first}, {stop}))):
        if k == {clear_at}:
            optimizer.zero_grad()
        loss = model(x).pow(2).mean() / accumulation
        loss.backward()
        if {step_test}:
            optimizer.step()
"""


@pytest.mark.parametrize(("first", "stop", "clear_at", "step_test"), [
    ("1", "accumulation + 1", "1", "k % accumulation == 0"),
    ("1", "accumulation + 1", "1", "k == accumulation"),
    ("0", "accumulation", "0", "k == accumulation - 1"),
    ("0", "accumulation", "0", "(k + 1) % accumulation == 0"),
])
def test_a_cycling_counter_clears_at_the_start_of_every_window(first: str, stop: str, clear_at: str,
                                                               step_test: str) -> None:
    assert codes(CYCLE.format(first=first, stop=stop, clear_at=clear_at, step_test=step_test)) == set()


def test_a_cycling_counter_cleared_at_its_last_value_steps_on_stale_gradients() -> None:
    # cleared at the window's last micro-batch, after its backward: the window's other micro-batches are lost
    found = codes(CYCLE.format(first="1", stop="accumulation + 1", clear_at="accumulation",
                               step_test="k % accumulation == 0"))
    assert found and {code for _, code in found} <= {"GL002", "GL001"}


def test_a_cycle_of_another_length_is_no_window_counter() -> None:
    # `cycle(range(1, 3))` restarts every 2 values, the gate counts 4: the clear at `k == 1` fires twice a
    # window, dropping its first half: not silent
    text = CYCLE.format(first="1", stop="3", clear_at="1", step_test="k % accumulation == 0")
    assert codes(text) != set()


# A loop counter under another name (`analysis/counter_aliases.py`): `global_step = start_step + i` (b580 of
# lockbox 9), or `i` handed to a helper's `global_step`. Each binding once started the name's phases anew,
# unknown, so a path that stepped at the window's last micro-batch could skip the next window's clear: a
# certain false GL001 (and a GL002) on the correct loop. The name now reads the counter's phases, shifted;
# with an offset of unknown value, phases of its own that advance with the counter.
ALIASED = """\
import torch


def run(model, loader, grad_accum, start_step):
    optimizer = torch.optim.AdamW(model.parameters())
    for i, x in enumerate(loader):
        global_step = {alias}
        if {clear_test}:
            optimizer.zero_grad()
        loss = model(x).sum() / grad_accum
        loss.backward()
        if (global_step + 1) % grad_accum == 0:
            optimizer.step()
"""

HANDED = """\
import torch


def one_step(model, optimizer, x, global_step, grad_accum):
    if {clear_test}:
        optimizer.zero_grad()
    loss = model(x).sum() / grad_accum
    loss.backward()
    if (global_step + 1) % grad_accum == 0:
        optimizer.step()


def run(model, loader, grad_accum, start_step):
    optimizer = torch.optim.AdamW(model.parameters())
    for i, x in enumerate(loader):
        one_step(model, optimizer, x, {alias}, grad_accum)
"""

ALIASES = ["i", "start_step + i", "i + start_step", "i - start_step", "len(loader) + i"]


@pytest.mark.parametrize("alias", ALIASES)
@pytest.mark.parametrize("program", [ALIASED, HANDED], ids=["bound", "handed"])
def test_a_counter_under_another_name_clears_at_each_window_start(program: str, alias: str) -> None:
    assert codes(program.format(alias=alias, clear_test="global_step % grad_accum == 0")) == set()


@pytest.mark.parametrize("alias", ALIASES)
@pytest.mark.parametrize(("program", "clear_line"), [(ALIASED, 9), (HANDED, 6)], ids=["bound", "handed"])
def test_a_counter_under_another_name_cleared_at_the_window_end_drops_gradients(program: str, clear_line: int,
                                                                                   alias: str) -> None:
    # cleared before the backward of the window's last micro-batch: the others are lost
    found = codes(program.format(alias=alias, clear_test="(global_step + 1) % grad_accum == 0"))
    assert (clear_line, "GL002") in found


@pytest.mark.parametrize(("program", "step_line"), [(ALIASED, 12), (HANDED, 9)], ids=["bound", "handed"])
def test_a_counter_shifted_by_a_known_offset_keeps_its_first_window(program: str, step_line: int) -> None:
    # from `i + 1`, the first window ends at `global_step` N - 1: N - 1 micro-batches, the only finding
    assert codes(program.format(alias="i + 1", clear_test="global_step % grad_accum == 0")) == {(step_line, "GL004")}


@pytest.mark.parametrize(("alias", "off_by_one"), [("i", True), ("i + 1", False), ("start_step + i", False)])
def test_only_a_known_offset_places_the_first_micro_batch(alias: str, off_by_one: bool) -> None:
    # `global_step % N == 0` steps on the first micro-batch when `global_step` starts at 0 (GL004); plus an
    # offset of unknown value, where the first micro-batch falls in its window is not known: no judgement
    text = ALIASED.format(alias=alias, clear_test="False").replace(
        "if (global_step + 1) % grad_accum == 0:\n            optimizer.step()",
        "if global_step % grad_accum == 0:\n            optimizer.step()\n            optimizer.zero_grad()")
    assert ((12, "GL004") in codes(text)) is off_by_one



EPOCHS = """\
import torch


def run(model, loader, grad_accum, epochs):
    optimizer = torch.optim.AdamW(model.parameters())
    for epoch in range(epochs):
        for i, x in enumerate(loader):
            batches_done = {count}
            if {clear_test}:
                optimizer.zero_grad()
            loss = model(x).sum() / grad_accum
            loss.backward()
            if (batches_done + 1) % grad_accum == 0:
                optimizer.step()
"""


@pytest.mark.parametrize("count", ["len(loader) * epoch + i", "i + epoch * len(loader)"])
def test_a_batch_count_across_epochs_goes_on_from_the_last_epoch(count: str) -> None:
    # each epoch's first batch follows the last one of the epoch before: a window that the epoch's end cut
    # goes on in the next one (read from an unknown place, a path could step without the clear before it)
    assert codes(EPOCHS.format(count=count, clear_test="batches_done % grad_accum == 0")) == set()
    assert (10, "GL002") in codes(EPOCHS.format(count=count, clear_test="(batches_done + 1) % grad_accum == 0"))
