"""A forward that returns what an unread call makes of a container (`TensorDict({...})`) is no reading of its items.

GiBeomGood's ResNetClassifier returns `TensorDict({"loss": loss, "metrics": {"loss": loss.detach()}},
batch_size=())`; the training loop backpropagates `output["loss"]` and keeps `output["metrics"]` per batch. The
forward being read, its result was taken as known, and the metrics item (of an object `tensordict` makes, which no
catalogue row models) as holding the loss's graph: a certain GL008 (lockbox 39, kind 3; reported at main.py once
the abstract base's `forward` stopped standing for it). Which item of such an object holds which graph is not read:
the items are those of a result not read; the item backpropagated still holds its graph."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = """\
import torch
import torch.nn.functional as F
from tensordict import TensorDict
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 3)

    def forward(self, image, target):
        output = self.net(image)
        loss = F.cross_entropy(output, target)
        return RESULT


model = Classifier()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
kept = {}
for i in range(10):
    optimizer.zero_grad()
    output = model(torch.randn(2, 4), torch.tensor([0, 1]))
    output["loss"].backward()
    optimizer.step()
    kept[i] = output[KEY]
"""
WRAPPED = 'TensorDict({"loss": loss, "metrics": {"loss": loss.detach()}}, batch_size=())'
KEPT_LINE = SOURCE.splitlines().index("    kept[i] = output[KEY]") + 1


def _certain(text: str) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics if d.certainty == "certain"]


def test_an_item_of_an_unread_container_is_not_known_to_hold_a_graph() -> None:
    assert _certain(SOURCE.replace("RESULT", WRAPPED).replace("KEY", '"metrics"')) == []


def test_the_item_backpropagated_still_holds_its_graph() -> None:
    assert _certain(SOURCE.replace("RESULT", WRAPPED).replace("KEY", '"loss"')) == [("GL008", KEPT_LINE)]


def test_a_dict_built_in_sight_is_read_by_key() -> None:
    """`return {"loss": loss, "metrics": loss * 2}`: read, the metrics hold the graph."""
    text = SOURCE.replace("RESULT", '{"loss": loss, "metrics": loss * 2}').replace("KEY", '"metrics"')
    assert _certain(text) == [("GL008", KEPT_LINE)]
