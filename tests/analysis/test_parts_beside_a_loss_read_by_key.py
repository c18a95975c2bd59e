"""A criterion whose `forward` returns its loss beside a dict of logged numbers (`return total, {"hard": hard.item(),
...}`). Three facts were lost on the way from that `return` to the caller's running total, each making a certain GL008
of a dict that holds only `.item()` numbers (Power-Fault-Detection x6 and SVDD2024, lockbox 44):

- a part the analysis could not read (the loss, built by a call past the reading depth) kept the whole tuple from
  being split, so the dict beside it was given the forward's graph;
- a dict part holding one tensor among numbers was given the graph under every key, not under that key only;
- a value found to be no tensor (`x.item() if isinstance(x, torch.Tensor) else x`, `x` of `x = 0` to which a loss
  term may be added) kept the parameters it reached, so it still counted as a tensor of this forward.

The bug beside each stays found: the loss itself, or the key that holds a tensor, added to the total."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

OPAQUE_LOSS = """\
import torch
import torch.nn as nn
from somewhere_unread import make_helper


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.adj = nn.Parameter(torch.zeros(3, 3))
        self.helper = make_helper(self.adj)

    def forward(self, x):
        return self.lin(x)

    def extra_loss(self):
        return self.helper.get_matrix().abs().mean()


class Criterion(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = nn.CrossEntropyLoss()

    def forward(self, logits, labels, model=None):
        parts = {}
        loss_a = self.fn(logits, labels)
        parts["a"] = loss_a.item()
        total = loss_a
        if model is not None and hasattr(model, "extra_loss"):
            loss_b = model.extra_loss()
            parts["b"] = loss_b.item()
            total += 0.1 * loss_b
        parts["total"] = total.item()
        return total, parts


def main():
    model = Net()
    criterion = Criterion()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        running = 0
        for i in range(10):
            x = torch.randn(8, 4)
            y = torch.randint(0, 3, (8,))
            optimizer.zero_grad()
            loss, parts = criterion(model(x), y, model=model)
            loss.backward()
            optimizer.step()
            running += {added}
        print(running / 10)


main()
"""

DICT_BY_KEY = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Distill(nn.Module):
    def forward(self, student, teacher, labels, feats=None):
        hard = F.cross_entropy(student, labels)
        soft = F.kl_div(F.log_softmax(student, 1), F.softmax(teacher, 1), reduction="batchmean")
        feature_loss = 0
        if feats is not None:
            feature_loss += F.mse_loss(feats[0], feats[1])
        total = 0.5 * soft + 0.5 * hard + feature_loss
        return total, {{
            "hard": hard.item(),
            "soft": {soft},
            "feature": {feature},
            "total": total.item(),
        }}


def train_epoch(model, teacher, crit, loader, optimizer):
    totals = {{{keys}}}
    for x, y in loader:
        s = model(x)
        loss, parts = crit(s, teacher(x).detach(), y, (s, s.detach()))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        for key in totals:
            if key in parts:
                totals[key] += parts[key]
    return totals


model = nn.Linear(4, 3)
teacher = nn.Linear(4, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(4)]
for epoch in range(2):
    print(train_epoch(model, teacher, Distill(), loader, optimizer))
"""

NARROWED = "feature_loss.item() if isinstance(feature_loss, torch.Tensor) else feature_loss"


def by_key(feature: str = NARROWED, soft: str = "soft.item()", keys: str = '"hard": 0, "soft": 0') -> str:
    return DICT_BY_KEY.format(feature=feature, soft=soft, keys=keys)


def gl008(source: str) -> list[tuple[int, str]]:
    return [(d.line, d.certainty) for d in check_source(source) if d.code == "GL008"]


@pytest.mark.parametrize("added", ['parts.get("total", loss.item())', 'parts.get("a", 0)', 'parts["b"]'])
def test_numbers_beside_a_loss_not_read_hold_no_graph(added: str) -> None:
    assert gl008(OPAQUE_LOSS.replace("{added}", added)) == []


def test_the_loss_not_read_itself_still_keeps_its_graph() -> None:
    assert gl008(OPAQUE_LOSS.replace("{added}", "loss")) == [(51, "certain")]


@pytest.mark.parametrize("keys", ['"hard": 0, "total": 0', '"hard": 0, "feature": 0, "total": 0'])
def test_keys_holding_numbers_hold_no_graph(keys: str) -> None:
    assert gl008(by_key(keys=keys)) == []


@pytest.mark.parametrize("keys", ['"soft": 0', '"hard": 0, "soft": 0'])
def test_the_key_holding_a_tensor_keeps_the_graph(keys: str) -> None:
    assert gl008(by_key(soft="soft", keys=keys)) == [(32, "certain")]


def test_a_term_not_narrowed_to_a_number_keeps_the_graph() -> None:
    assert gl008(by_key(feature="feature_loss", keys='"hard": 0, "feature": 0')) == [(32, "certain")]
