"""A method that stores its loss, graph and all, on its object (`self.outputs.append(loss)`) keeps one graph per call:
how often it is called is read where a loop of the file calls it, or modelled for a framework's hook (Lightning's
`training_step`, once per batch). A method nothing calls is only taken to run once per batch: the GL008 there rests on
that calling context (Hermes-HQS's `validation_step`, lockbox 40: Lightning runs it under no grad, and nothing in
sight said it runs per batch with a graph), and is possible."""

from __future__ import annotations

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

MODULE = """
import torch
from torch import nn


class Learner:
    def __init__(self):
        self.net = nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
        self.outputs = []

    def {name}(self, x, y):
        self.opt.zero_grad()
        loss = nn.functional.mse_loss(self.net(x), y)
        self.outputs.append(loss)
        loss.backward()
        self.opt.step()
        return loss
{driver}
"""

DRIVER = """

learner = Learner()
for x, y in [(torch.randn(2, 4), torch.randn(2, 1))] * 8:
    learner.{name}(x, y)
"""


def _found(name: str, driver: str = "") -> list[tuple[str, int, str]]:
    source = textwrap.dedent(MODULE.format(name=name, driver=driver.format(name=name)))
    return [(d.code, d.line, d.certainty.value) for d in check_source(source, "t.py", settings=Settings.default())]


def test_a_method_nothing_calls_keeps_graphs_only_if_called_per_batch() -> None:
    assert _found("validation_step") == [("GL008", 15, "possible")]


def test_a_loop_that_calls_it_makes_it_certain() -> None:
    assert _found("fit_batch", DRIVER) == [("GL008", 15, "certain")]
