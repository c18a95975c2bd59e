"""GL008: an accumulator reset in each iteration of the loop that draws the batches, and kept in a loop
that repeats its work on that batch (`for _ in range(rep_discriminator):`), holds the graphs of one
batch's repetitions, dropped at the next batch (VocGAN's fixed trainer). Reset once an epoch, or kept
across batches the inner loop draws itself, it still holds the graphs of many batches."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def gl008_lines(text: str) -> set[int]:
    return {d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"}


def accumulating_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if "total += loss" in line)


HEAD = """\
import torch
import tqdm

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters())
"""

REPEATS = """\
for x in loader:
    total = 0.0
    for _ in range(rep):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        total += loss
    print((total / rep).item())
"""

REPEATS_UNDER_A_TEST = """\
for step, (x, y) in enumerate(tqdm.tqdm(loader)):
    if step > warmup:
        total = 0.0
        for _ in range(args.rep_discriminator):
            optimizer.zero_grad()
            loss = (model(x) - y).pow(2).mean()
            loss.backward()
            optimizer.step()
            total += loss
        print(total.item())
"""

REPEATS_TWO_DEEP = """\
for x in loader:
    total = 0.0
    for _ in range(rounds):
        for k in range(rep):
            optimizer.zero_grad()
            loss = model(x).pow(2).mean() * (k + 1)
            loss.backward()
            optimizer.step()
            total += loss
    print(total.item())
"""


@pytest.mark.parametrize("loop", [REPEATS, REPEATS_UNDER_A_TEST, REPEATS_TWO_DEEP], ids=["plain", "under-a-test", "two-deep"])
def test_an_accumulator_reset_per_batch_and_kept_over_its_repetitions_is_silent(loop: str) -> None:
    assert gl008_lines(HEAD + loop) == set()


RESET_PER_EPOCH = """\
for epoch in range(epochs):
    total = 0.0
    for x in loader:
        for _ in range(rep):
            optimizer.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            optimizer.step()
            total += loss
    print(total.item())
"""

EPOCH_OF_SYNTHETIC_STEPS = """\
for epoch in range(epochs):
    total = 0.0
    for _ in range(steps):
        x = torch.randn(8, 4)
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        total += loss
    print(total.item())
"""

INNER_LOOP_FETCHES = """\
for task in tasks:
    total = 0.0
    for _ in range(steps):
        x = next(it)
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        total += loss
    print(total.item())
"""

INNER_LOOP_INDEXES = """\
for shard in shards:
    total = 0.0
    for i in range(len(shard)):
        optimizer.zero_grad()
        loss = model(shard[i]).pow(2).mean()
        loss.backward()
        optimizer.step()
        total += loss
    print(total.item())
"""

RESET_BEFORE_THE_BATCHES = """\
total = 0.0
for x in loader:
    for _ in range(rep):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        total += loss
print(total.item())
"""


@pytest.mark.parametrize("loop", [RESET_PER_EPOCH, EPOCH_OF_SYNTHETIC_STEPS, INNER_LOOP_FETCHES, INNER_LOOP_INDEXES,
                                  RESET_BEFORE_THE_BATCHES],
                         ids=["per-epoch", "epoch-of-synthetic-steps", "inner-fetches", "inner-indexes", "never-reset"])
def test_an_accumulator_outliving_one_batch_is_still_reported(loop: str) -> None:
    text = HEAD + loop
    assert gl008_lines(text) == {accumulating_line(text)}
