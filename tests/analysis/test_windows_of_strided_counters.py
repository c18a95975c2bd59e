"""A window gate whose counter counts loop iterations of which only some are micro-batches: `i` advances on
every sample, the backward runs under `if i % batch_size == 0:` and the step under `if i % 32 == 0:` (lockbox
38's ger_ump_cp pretrain.py). The window holds `32 / batch_size` micro-batches, not 32; and the phase of `i` says
nothing of the first window's length in micro-batches. Before: GL004 (first window longer than N) on a loop whose
windows are all alike, and GL003 "not divided by `32`" with a safe fix dividing by 32, a wrong safe fix."""

from __future__ import annotations

from gradcheck_lint import check_source

LOOP = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batch_size = 16
samples = []
i = 0
for sample in data:
    i += 1
    samples.append(sample)
    if i % batch_size == 0:
        x = torch.stack(samples)
        loss = {loss}
        loss.backward()
        if i % 32 == 0:
            optimizer.step()
            optimizer.zero_grad()
        samples = []
"""


def test_an_undivided_loss_names_the_micro_batches_of_a_window():
    [found] = check_source(LOOP.format(loss="model(x).mean()"), "train.py")
    assert found.code == "GL003" and "`32 / batch_size`" in found.message
    assert found.fix is None  # dividing by 32 would be wrong; dividing by the quotient assumes 32 is a multiple


def test_a_loss_divided_by_a_number_is_possible():
    found = check_source(LOOP.format(loss="model(x).mean() / 2"), "train.py")
    assert [(d.code, d.certainty) for d in found] == [("GL003", "possible")]


def test_the_counters_phase_is_not_read_as_micro_batches():
    found = check_source(LOOP.format(loss="model(x).mean() / 2"), "train.py")
    assert "GL004" not in [d.code for d in found]


def test_a_counter_of_micro_batches_keeps_its_phase():
    # the same counter advanced once per micro-batch and started at 1 (2 on the first micro-batch): GL004 as before
    source = LOOP.format(loss="model(x).mean() / 32").replace("    if i % batch_size == 0:\n", "    if True:\n").replace(
        "i = 0\n", "i = 1\n")
    assert "GL004" in [d.code for d in check_source(source, "train.py")]


# A window written as a number past the sizes tried for names (2..8): `i % 32 == 0` was looked for over 3 * 8
# micro-batches only, never found, and read as a first window longer than any. Correct loops got GL004.
PLAIN = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
i = {start}
for x in loader:
    i += 1
    loss = model(x).mean() / 32
    loss.backward()
    if {test}:
        optimizer.step()
        optimizer.zero_grad()
"""


def gl004(start: int, test: str) -> list[str]:
    return [d.message for d in check_source(PLAIN.format(start=start, test=test), "train.py") if d.code == "GL004"]


def test_a_literal_window_counted_from_one_is_right():
    assert gl004(0, "i % 32 == 0") == []


def test_a_literal_window_counted_from_two_is_short():
    [message] = gl004(1, "i % 32 == 0")
    assert "before N micro-batches" in message


def test_a_literal_window_shifted_by_one_is_short():
    [message] = gl004(0, "(i + 1) % 32 == 0")
    assert "before N micro-batches" in message
