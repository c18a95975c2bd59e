"""An abstract `forward` (`@abstractmethod` over `pass`) is no reading of what the module returns.

GiBeomGood's training function knows its model only as `model: BaseModel`, whose `forward` is declared abstract
with an empty body; every subclass (in other files) returns its metrics detached. The empty body was read as the
forward: what the result's items hold was taken as known, and the metrics kept per batch as holding the pass's
graph (lockbox 39, a certain false GL008, kind 3). A stub a subclass overrides says nothing of what runs: the
result is that of a forward not read, as for a model of no class known."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = """\
from abc import ABC, abstractmethod

import torch
from torch import nn


class BaseModel(nn.Module, ABC):
    DECORATOR
    def forward(self, *args, **kwargs) -> dict[str, torch.Tensor]:
        BODY


def train_epoch(model: BaseModel, loader, optimizer):
    kept = {}
    for i, batch in enumerate(loader):
        optimizer.zero_grad()
        output = model(**batch)
        output["loss"].backward()
        optimizer.step()
        kept[i] = output["metrics"]
    return kept
"""


def _codes(text: str, *, possible: bool = False) -> list[tuple[str, int]]:
    report = analyse_text(text, "train.py")
    return [(d.code, d.span.line) for d in report.diagnostics if possible or d.certainty == "certain"]


def test_the_items_of_an_abstract_forward_are_not_known() -> None:
    for decorator, body in (("@abstractmethod", "pass"), ("@abstractmethod", "..."),
                            ("", "raise NotImplementedError")):
        assert _codes(SOURCE.replace("DECORATOR", decorator).replace("BODY", body)) == []


def test_a_forward_read_still_says_what_its_items_hold() -> None:
    """A concrete `forward` returning the loss as its metrics: the item kept holds the graph."""
    body = 'loss = self.net(args[0]).mean()\n        return {"loss": loss, "metrics": loss * 2}'
    text = SOURCE.replace("DECORATOR", "").replace("BODY", body).replace(
        "class BaseModel(nn.Module, ABC):", "class BaseModel(nn.Module, ABC):\n    net = nn.Linear(4, 1)\n")
    assert ("GL008", text.splitlines().index('        kept[i] = output["metrics"]') + 1) in _codes(text)
