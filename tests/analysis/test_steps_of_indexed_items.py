"""A step of the item a loop's index picks (`for i in range(n): ... self.optimizers[i].step()`), mutual learning's
loop over its models: the models and optimizers kept in lists are read as one object each, so whether the backward
of `outputs[i]`'s loss goes through a model an earlier item's step changed rests on the pairing of items, which the
analysis does not follow. DCML (lockbox 32) detaches its peers (`Variable(outputs[j])`) and got two certain GL009:
the finding is possible. A step of one named optimizer keeps it certain."""

from __future__ import annotations

from gradcheck_lint import check_source
from gradcheck_lint.diagnostics import Certainty

MUTUAL = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class Mutual:
    def __init__(self, n):
        self.models, self.optimizers = [], []
        for i in range(n):
            model = nn.Linear(4, 3)
            self.models.append(model)
            self.optimizers.append(torch.optim.SGD(model.parameters(), lr=0.1))

    def train(self, loader):
        for images, labels in loader:
            outputs = []
            for model in self.models:
                outputs.append(model(images))
            for i in range(len(self.models)):
                loss = F.cross_entropy(outputs[i], labels)
                for j in range(len(self.models)):
                    if i != j:
                        loss = loss + F.kl_div(F.log_softmax(outputs[i], 1), F.softmax({peer}, 1))
                self.optimizers[i].zero_grad()
                loss.backward()
                self.optimizers[i].step()


Mutual(2).train([(torch.randn(5, 4), torch.randint(0, 3, (5,)))] * 2)
"""

SHARED = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for images in [torch.randn(5, 4)] * 2:
    out = model(images)
    for k in range(2):
        loss = out[:, k].mean()
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()
"""


def gl009(source: str) -> list[Certainty]:
    return [d.certainty for d in check_source(source) if d.code == "GL009"]


def test_the_step_of_an_item_a_loop_index_picks_leaves_the_stale_graph_possible() -> None:
    for peer in ("Variable(outputs[j])", "outputs[j].detach()", "outputs[j]"):
        assert Certainty.CERTAIN not in gl009(MUTUAL.format(peer=peer)), peer


def test_the_step_of_one_named_optimizer_keeps_it_certain() -> None:
    assert gl009(SHARED) == [Certainty.CERTAIN]
