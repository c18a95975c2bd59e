"""A window counted in samples, not micro-batches: `seen += x.size(0)` ... `if seen >= optim_batch_size:`
(torchseq's model agent, a lockbox-4 miss). The window holds `optim_batch_size` samples; each micro-batch's
mean loss must be weighted by its share of them (`loss * x.size(0) / optim_batch_size`). Dividing by the
window's size in samples, the fix offered for a window of micro-batches, would be wrong: no fix is offered."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

LOOP = """\
import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters())
optim_batch_size = 64
steps_accum = 0
for x, y in loader:
    {loss}
    loss.backward()
    steps_accum += {amount}
    if steps_accum >= optim_batch_size:
        optimizer.step()
        optimizer.zero_grad()
        steps_accum = 0
"""


@pytest.mark.parametrize("amount", ["x.size(0)", "len(x)", "x.shape[0]", "curr_batch_size"])
def test_an_unweighted_loss_in_a_window_of_samples_is_reported_without_a_fix(amount: str) -> None:
    src = LOOP.format(loss="loss = (model(x) - y).pow(2).mean()", amount=amount)
    if amount == "curr_batch_size":
        src = src.replace("    loss.backward()\n", "    loss.backward()\n    curr_batch_size = x.size(0)\n")
    found = check_source(src)
    assert [d.code for d in found] == ["GL003"]
    assert f"counted by `{amount}`" in found[0].message and "optim_batch_size" in found[0].message
    assert found[0].fix is None  # `loss / optim_batch_size` is not the fix
    assert f"loss * {amount} / optim_batch_size" in found[0].help


@pytest.mark.parametrize("loss", [
    "loss = (model(x) - y).pow(2).mean() * x.size(0) / optim_batch_size",  # torchseq's fix
    "loss = (model(x) - y).pow(2).mean() * (x.size(0) / optim_batch_size)",
    "loss = (model(x) - y).pow(2).sum() / optim_batch_size",  # a sum over the samples, over the window's count
])
def test_a_loss_weighted_by_its_share_of_the_samples_is_not_reported(loss: str) -> None:
    assert [d.code for d in check_source(LOOP.format(loss=loss, amount="x.size(0)"))] == []


def test_a_running_sum_of_sample_weighted_values_is_no_counter() -> None:
    """`total += loss.item() * x.size(0)` is a running loss, not a window counter: a test of it gates
    nothing (and a window counted in micro-batches is still read as before)."""
    src = LOOP.format(loss="loss = (model(x) - y).pow(2).mean()", amount="1").replace(
        "optim_batch_size", "accum_steps").replace("    loss.backward()\n", "    loss.backward()\n    total += loss.item() * x.size(0)\n")
    found = check_source("total = 0.0\n" + src)
    assert [d.code for d in found] == ["GL003"] and "not divided by `accum_steps`" in found[0].message
    assert found[0].fix is not None


def test_a_sample_counter_tested_for_logging_gates_no_step() -> None:
    src = """\
import torch
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters())
seen = 0
for x, y in loader:
    optimizer.zero_grad()
    loss = (model(x) - y).pow(2).mean()
    loss.backward()
    optimizer.step()
    seen += x.size(0)
    if seen >= log_every_samples:
        print(loss.item())
        seen = 0
"""
    assert check_source(src) == []


@pytest.mark.parametrize(("factor", "codes"), [
    ("(accum_steps / 2)", ["GL003"]),  # multiplies by the window (over 2): reported as before
    ("(x.size(0) / accum_steps)", []),  # the window in the denominator divides the loss
])
def test_a_quotient_multiplies_by_what_is_in_its_numerator(factor: str, codes: list[str]) -> None:
    src = f"""\
import torch
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters())
for i, (x, y) in enumerate(loader):
    loss = (model(x) - y).pow(2).mean() * {factor}
    loss.backward()
    if (i + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
    assert [d.code for d in check_source(src)] == codes


@pytest.mark.parametrize(("loss", "codes"), [
    ("loss = model(x[j:j + microbatch]).mean() * microbatch / batchsize", []),  # LaTeX-OCR's fix: a chunk's share
    ("loss = model(x[j:j + microbatch]).mean()", ["GL003"]),  # its bug: the chunks' means summed
])
def test_the_stride_of_a_loop_over_chunks_is_a_size_not_the_window(loss: str, codes: list[str]) -> None:
    src = f"""\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters())
for x in loader:
    opt.zero_grad()
    for j in range(0, len(x), microbatch):
        {loss}
        loss.backward()
    opt.step()
"""
    assert [d.code for d in check_source(src)] == codes



CHUNKS = """\
import torch
import torch.nn.functional as F
model = torch.nn.Linear(4, 3)
opt = torch.optim.Adam(model.parameters())
for x, y, y_mask in loader:
    opt.zero_grad()
    B_total = x.shape[1]
    total_valid_tokens = int(y_mask.sum().item())
    for b_start in range(0, B_total, CHUNK):
        b_end = min(b_start + CHUNK, B_total)
        flat_logits = model(x[:, b_start:b_end]).reshape(-1, 3)
        flat_targets = y[:, b_start:b_end].reshape(-1)
        flat_mask = y_mask[:, b_start:b_end].reshape(-1).bool()
        {loss}
        {backward}
    opt.step()
"""
SUMMED = 'loss_sum_chunk = F.cross_entropy(flat_logits[flat_mask], flat_targets[flat_mask], reduction="sum")'
MEAN = "loss_sum_chunk = F.cross_entropy(flat_logits, flat_targets)"


@pytest.mark.parametrize(("loss", "backward", "codes"), [
    # snntorch's TinyStories loop (a lockbox-5 false alarm): a sum over each chunk's tokens divided by the token
    # count of the whole batch the chunks are cut from, so the chunks' shares add up to the batch's mean
    (SUMMED, "(loss_sum_chunk / float(total_valid_tokens)).backward()", []),
    (MEAN, "loss_sum_chunk.backward()", ["GL003"]),  # each chunk's mean: the means add up
])
def test_a_count_over_the_data_the_chunks_are_cut_from_normalises_the_window(loss: str, backward: str, codes: list[str]) -> None:
    assert [d.code for d in check_source(CHUNKS.format(loss=loss, backward=backward))] == codes


SEQUENCE = """\
import torch
model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x_seq, target_seq in loader:
    optimizer.zero_grad()
    for t, x_t in enumerate({walked}):
        loss = torch.nn.functional.mse_loss(model(x_t), target_seq[t])
        loss.backward()
    optimizer.step()
"""


@pytest.mark.parametrize(("walked", "codes"), [
    # spikingjelly's OTTT loop (a lockbox-5 false alarm): the time steps of one sequence, whose per-step losses
    # are one objective's terms, summed on purpose
    ("x_seq", []),
    ("x_seq.transpose(0, 1)", ["GL003"]),  # not a name: not read as time steps
    ("micro_batches", ["GL003"]),
])
def test_walking_a_sequence_by_its_time_steps_is_no_window(walked: str, codes: list[str]) -> None:
    assert [d.code for d in check_source(SEQUENCE.format(walked=walked))] == codes


# Lockbox 38: CDGP's `update_num_all += sum(target_batch != 0)` ... `if (update_num_all >= 50) or (accumulation_steps
# == 8):`, ger_ump_cp's windows of samples compared with a number. A window of samples compared with an int is still
# counted in samples (before, only a name was): the message said "not divided by `50`", a wrong divisor.
@pytest.mark.parametrize("amount", ["sum(y != 0)", "(y != 0).sum()", "(y != 0).sum().item()", "x.size(0)"])
def test_a_window_of_counted_items_compared_with_a_number(amount: str) -> None:
    src = LOOP.format(loss="loss = (model(x) - y).pow(2).mean()", amount=amount).replace(
        "steps_accum >= optim_batch_size", "(steps_accum >= 50) or (steps == 8)")
    found = check_source(src)
    assert [d.code for d in found] == ["GL003"] and f"counted by `{amount}`" in found[0].message
    assert found[0].certainty == "certain" and found[0].fix is None


def test_a_loss_divided_by_a_number_in_a_window_of_samples_is_possible() -> None:
    # `loss / 4` with 64 samples a window: right when a micro-batch holds 16, which the code does not say
    src = LOOP.format(loss="loss = (model(x) - y).pow(2).mean() / 4", amount="x.size(0)").replace(
        "steps_accum >= optim_batch_size", "steps_accum >= 64")
    found = check_source(src)
    assert [(d.code, d.certainty) for d in found] == [("GL003", "possible")]
