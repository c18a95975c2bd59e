"""GL008: `x.append(v)` keeps `v` only when `x` is known to be a container (a literal, `list()`, a `deque`,
a name or attribute bound to one) or an object whose `append` the analysis reads. An object of a class
it did not read (`run_loss = CumulativeAverage()` of monai.metrics, whose `append` detaches and keeps
sums) may keep anything or nothing: not reported, nor what its other methods return (`aggregate()`)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def gl008_lines(text: str) -> set[int]:
    return {d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"}


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


LOOP = """\
import torch
{imports}

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters())
epoch_loss_values = []
for epoch in range(3):
    run_loss = {make}
    for x in loader:
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        {store}
    avg_loss = run_loss.aggregate()
    epoch_loss_values.append(avg_loss)
"""

UNREAD = [
    ("from monai.metrics import CumulativeAverage", "CumulativeAverage()", "run_loss.append(loss, count=x.shape[0])"),
    ("import monai.metrics", "monai.metrics.CumulativeAverage()", "run_loss.append(loss)"),
    ("from torchmetrics.aggregation import MeanMetric as Mean", "Mean()", "run_loss.append(loss)"),
    ("from monai.metrics import CumulativeAverage", "CumulativeAverage()", "run_loss += loss"),
]


@pytest.mark.parametrize(("imports", "make", "store"), UNREAD, ids=["append", "module-attribute", "alias", "iadd"])
def test_an_object_of_an_unread_class_is_not_taken_for_a_list(imports: str, make: str, store: str) -> None:
    assert gl008_lines(LOOP.format(imports=imports, make=make, store=store)) == set()


CONTAINERS = [
    ("", "[]", "run_loss.append(loss)"),
    ("", "list()", "run_loss.append(loss)"),
    ("from collections import deque", "deque()", "run_loss.append(loss)"),  # (with `maxlen`: bounded, no growth)
    ("import collections", "collections.deque()", "run_loss.insert(0, loss)"),
    ("from mylib import make_history", "make_history()", "run_loss.append(loss)"),
]


@pytest.mark.parametrize(("imports", "make", "store"), CONTAINERS, ids=["literal", "list-call", "deque", "collections-deque", "unread-function"])
def test_a_container_or_a_receiver_of_unknown_kind_still_keeps_the_graph(imports: str, make: str, store: str) -> None:
    text = LOOP.format(imports=imports, make=make, store=store).replace("    avg_loss = run_loss.aggregate()\n    epoch_loss_values.append(avg_loss)\n", "")
    assert gl008_lines(text) == {line_of(text, store)}


TRAINER = """\
import torch
from monai.metrics import CumulativeAverage


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters())
        self.run_loss = {make}

    def fit(self, loader):
        for x in loader:
            self.optimizer.zero_grad()
            loss = self.model(x).pow(2).mean()
            loss.backward()
            self.optimizer.step()
            self.run_loss.append(loss)
        return self.run_loss.aggregate()
"""


def test_an_attribute_initialised_to_an_unread_class_object_is_silent() -> None:
    assert gl008_lines(TRAINER.format(make="CumulativeAverage()")) == set()


def test_an_attribute_initialised_to_a_list_is_still_reported() -> None:
    text = TRAINER.format(make="[]")
    assert gl008_lines(text) == {line_of(text, "self.run_loss.append(loss)")}
