"""A loop's counter compared with a bound the loop does not assign: once past the bound, every later iteration
is past it too (`Interpreter.lasting_tests`). Lockbox 38's PN-Diffusion replays the schedule of the epochs a run
resumes past (`if epoch < args.start_epoch: optimizer.step() ... continue`), all before any training epoch; a
path that trained an epoch and then took the replay again stepped on the gradients the training left: two
certain GL001 on a path no run has."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

LOOP = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for epoch in {epochs}:
    if {test}:
        optimizer.step()  # replay
        continue
    for x in loader:
        optimizer.zero_grad()
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
{after}"""


def gl001(test: str, epochs: str = "range(num_epochs)", after: str = "") -> list[int]:
    return [d.line for d in check_source(LOOP.format(test=test, epochs=epochs, after=after), "train.py") if d.code == "GL001"]


@pytest.mark.parametrize("test", ["epoch < start_epoch", "start_epoch > epoch", "epoch <= last_replayed",
                                  "not epoch >= start_epoch"])
def test_a_replay_before_the_bound_never_follows_training(test: str) -> None:
    assert gl001(test) == []


def test_enumerate_counts_up_too() -> None:
    source = LOOP.format(test="epoch < start_epoch", epochs="enumerate(schedule)", after="").replace(
        "for epoch in", "for epoch, _ in")
    assert [d.code for d in check_source(source, "train.py") if d.code == "GL001"] == []


@pytest.mark.parametrize(("test", "epochs", "after"), [
    ("epoch % 3 == 0", "range(num_epochs)", ""),  # every third epoch: after training ones
    ("epoch < start_epoch", "range(num_epochs, 0, -1)", ""),  # counting down: past the bound, then before it
    ("epoch < start_epoch", "range(num_epochs)", "    start_epoch = epoch + 2\n"),  # the bound moves
    ("epoch > start_epoch", "range(num_epochs)", ""),  # after the bound: replays follow training epochs
])
def test_a_replay_that_can_follow_training_is_reported(test: str, epochs: str, after: str) -> None:
    assert gl001(test, epochs, after) == [7]
