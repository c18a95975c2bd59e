"""A module of a class read that provably holds no parameter builds no graph of its own when called.

FairBiNN's fairness penalty (`class DemographicParityLoss(ConstraintLoss)`, an `nn.Module` whose `__init__` stores
numbers and `torch.zeros(...)` matrices) is evaluated each epoch on predictions made under `torch.no_grad()` in
another function, and the result is kept in a list: calling a module was taken to run its parameters, so the result
was said to hold a graph (a certain GL008 of lockbox 34, kind 3). Now the class is read: every base is of the project
or `nn.Module`, nothing registers a parameter, and everything stored on `self` is data, so the result holds its
inputs' graphs only. A class that may hold one (an `nn.Parameter`, a part handed in) is called as before."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

PENALTY = """\
import torch
from torch import nn
import torch.nn.functional as F


class ConstraintLoss(nn.Module):
    def __init__(self, n_class=2, alpha=1, p_norm=2):
        super(ConstraintLoss, self).__init__()
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.alpha = alpha
        self.p_norm = p_norm
        self.n_class = n_class
        self.n_constraints = 2
        self.dim_condition = self.n_class + 1
        self.M = torch.zeros((self.n_constraints, self.dim_condition))
        self.c = torch.zeros(self.n_constraints)

    def mu_f(self, out=None, sensitive=None):
        return torch.zeros(self.n_constraints)

    def forward(self, out, sensitive):
        sensitive = sensitive.view(out.shape)
        out = torch.sigmoid(out)
        mu = self.mu_f(out=out, sensitive=sensitive)
        gap = F.relu(torch.mv(self.M.to(self.device), mu.to(self.device)) - self.c.to(self.device))
        return self.alpha * torch.dot(gap, gap)


class DemographicParityLoss(ConstraintLoss):
    def __init__(self, sensitive_classes=[0, 1], alpha=1, p_norm=2):
        self.sensitive_classes = sensitive_classes
        self.n_class = len(sensitive_classes)
        super(DemographicParityLoss, self).__init__(n_class=self.n_class, alpha=alpha, p_norm=p_norm)
        self.n_constraints = 2 * self.n_class
        self.dim_condition = self.n_class + 1
        self.M = torch.zeros((self.n_constraints, self.dim_condition))
        for i in range(self.n_constraints):
            if i % 2 == 0:
                self.M[i, i % 2] = 1.0
                self.M[i, -1] = -1.0
            else:
                self.M[i, i % 2 - 1] = -1.0
                self.M[i, -1] = 1.0
        self.c = torch.zeros(self.n_constraints)
        EXTRA

    def mu_f(self, out, sensitive):
        expected = [out[sensitive == v].mean() for v in self.sensitive_classes]
        expected.append(out.mean())
        return torch.stack(expected)


criterion_fairness = DemographicParityLoss(sensitive_classes=[0, 1], alpha=1000, p_norm=2)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loader = [(torch.randn(8, 4), torch.randint(0, 2, (8, 1)), torch.rand(8, 1)) for _ in range(3)]


def test_func(model_f):
    y_pred, sens = [], []
    for inputs, s, _y in loader:
        with torch.no_grad():
            y_pred.append(model_f(inputs).cpu())
            sens.append(s)
    y_pred = torch.cat(y_pred, dim=0)
    sens = torch.cat(sens, dim=0)
    return 0.5, criterion_fairness(y_pred, sens)


test_dp = []
for epoch in range(3):
    for inputs, s, y in loader:
        optimizer.zero_grad()
        loss = F.mse_loss(model(inputs), y) + criterion_fairness(model(inputs), s)
        loss.backward()
        optimizer.step()
    acc, sdp = test_func(model)
    test_dp.append(sdp)
"""


def _kept_at(text: str = PENALTY) -> tuple[str, int]:
    """GL008 at the line that keeps the penalty in the list."""
    return "GL008", text.split("\n").index("    test_dp.append(sdp)") + 1


def _codes(extra: str = "pass", text: str = PENALTY) -> list[tuple[str, int]]:
    source = text.replace("EXTRA", extra)
    return [(d.code, d.span.line) for d in analyse_text(source, "fair.py").diagnostics]


def test_a_penalty_of_plain_tensors_on_predictions_made_without_grad_holds_no_graph() -> None:
    assert _codes() == []


def test_the_same_penalty_of_the_training_predictions_is_still_kept_alive() -> None:
    """The list now takes the penalty of the training step's own predictions: their graph is in it (GL008)."""
    kept = PENALTY.replace("    acc, sdp = test_func(model)\n", "    sdp = criterion_fairness(model(inputs), s)\n")
    assert kept != PENALTY
    assert _kept_at(kept) in _codes(text=kept)


@pytest.mark.parametrize("extra", [
    "self.w = nn.Parameter(torch.ones(1))",                   # a parameter of its own
    "self.register_parameter('w', nn.Parameter(torch.ones(1)))",
    "self.proj = nn.Linear(3, 3)",                             # a part with parameters
    "self.c = torch.zeros(self.n_constraints, requires_grad=True)",
    "self.proj = build_projection()",                          # a call not modelled: may be a module
])
def test_a_class_that_may_hold_a_parameter_is_called_as_a_module(extra: str) -> None:
    assert _kept_at() in _codes(extra)


def test_a_part_handed_in_may_be_a_module() -> None:
    """`__init__(self, ..., net)` storing `self.net = net`: a parameter with no default may be a module."""
    text = PENALTY.replace("def __init__(self, sensitive_classes=[0, 1], alpha=1, p_norm=2):",
                           "def __init__(self, net, sensitive_classes=[0, 1], alpha=1, p_norm=2):")
    text = text.replace("DemographicParityLoss(sensitive_classes=[0, 1], alpha=1000, p_norm=2)",
                        "DemographicParityLoss(nn.Linear(1, 1), sensitive_classes=[0, 1], alpha=1000, p_norm=2)")
    assert _kept_at(text) in _codes("self.net = net", text)
