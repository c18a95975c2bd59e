"""Meters kept in a dict attribute of a logger object, and bounded windows.

trojanzoo's training loop (lockbox 35, a missed GL008) logs the loss tensor itself with
`logger.meters["loss"].update(loss, n)`, where `logger = MetricLogger()` and `logger.meters["loss"] =
SmoothedValue()`: the meter sums it (`self.total += value * n`), a graph per batch for the whole epoch. Three facts:
- an item stored into a dict that is an attribute of an object of a class read (`logger.meters["loss"] = ...`) is
  read back through that object (it was stored under the reference's text only, which the read never consulted);
- a name bound in the loop to an object read off a longer-lived one (`meter = logger.meters["loss"]`) is the same
  object at each iteration, not one made afresh: what its methods keep on it outlives the iteration;
- `deque(maxlen=20)` holds at most 20 values: appending the loss to it keeps 20 graphs at most, no growth."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gradcheck_lint.api import check_source

SCRIPT = """\
from collections import defaultdict, deque

import torch


class SmoothedValue:
    def __init__(self, window_size=20):
        self.deque = deque(maxlen=window_size)
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.deque.append(value)
        self.count += n
        self.total += value * n


class MetricLogger:
    def __init__(self):
        self.meters = defaultdict(SmoothedValue)


def train(model, loader, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _epoch in range(epochs):
        logger = MetricLogger()
        logger.meters["loss"] = SmoothedValue()
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            UPDATE
    return logger


logger = train(torch.nn.Linear(3, 1), [(torch.randn(4, 3), torch.randn(4, 1))] * 3, 2)
print(getattr(logger.meters["loss"].total, "grad_fn", None) is not None)
"""


@pytest.mark.parametrize("update, kept", [
    ('logger.meters["loss"].update(loss, int(y.size(0)))', True),
    ('meter = logger.meters["loss"]\n            meter.update(loss, int(y.size(0)))', True),
    ('logger.meters["loss"].update(loss.item(), int(y.size(0)))', False),
])
def test_a_meter_in_a_loggers_dict_sums_the_loss(tmp_path: Path, update: str, kept: bool) -> None:
    text = SCRIPT.replace("UPDATE", update)
    found = [(d.code, d.line) for d in check_source(text, "train.py")]
    # the sum grows (line 15); the bounded window (line 13) does not
    assert found == ([("GL008", 15)] if kept else []), found
    path = tmp_path / "train.py"
    path.write_text(text)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == [str(kept)], run.stderr


@pytest.mark.parametrize("made, kept", [
    ("deque(maxlen=window_size)", False),
    ("deque([], window_size)", False),
    ("deque()", True),
    ("deque(maxlen=None)", True),
    ("[]", True),
])
def test_a_window_of_fixed_length_keeps_no_growing_graph(made: str, kept: bool) -> None:
    text = SCRIPT.replace("deque(maxlen=window_size)", made).replace(
        "UPDATE", 'logger.meters["loss"].update(loss, 1)').replace(
        "        self.total += value * n\n", "")
    found = [(d.code, d.line) for d in check_source(text, "train.py")]
    assert (("GL008", 13) in found) is kept, found
