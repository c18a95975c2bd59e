"""The indices a reduction returns beside its values hold no graph: `torch.max(output, 1)[1]`,
`output.topk(5)[1]` (`unpacking.indices_item`), as `_, idx = output.max(1)` already read. video-classification
keeps `torch.max(output, 1)[1]` of every batch in a list: a certain GL008 that was false (lockbox 19, after its
opening). The values (`[0]`) still hold the graph; `torch.max(output)` alone is one tensor."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

TEXT = """\
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x)


def train(loader):
    model = Net()
    optimizer = torch.optim.Adam(model.parameters())
    all_y_pred = []
    for X, y in loader:
        optimizer.zero_grad()
        output = model(X)
        loss = F.cross_entropy(output, y)
        y_pred = {kept}
        all_y_pred.extend(y_pred)
        loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize(("kept", "gl008"), [
    ("torch.max(output, 1)[1]", False),
    ("output.max(1)[1]", False),
    ("output.max(dim=1)[1]", False),
    ("output.topk(2)[1]", False),
    ("torch.sort(output, dim=1)[1]", False),
    ("torch.max(output, 1)[0]", True),  # the values
    ("output.topk(2)[0]", True),
    ("torch.max(output)", True),  # one tensor, no indices
    ("output[1]", True),  # a row of the output, not an index
])
def test_indices_of_a_reduction_hold_no_graph(kept: str, gl008: bool) -> None:
    found = [d for d in analyse_text(TEXT.format(kept=kept), "train.py").diagnostics if d.code == "GL008"]
    assert bool(found) is gl008
