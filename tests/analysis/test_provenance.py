"""Certainty is computed from the provenance of the facts on a finding's chain, not asserted by rules."""

from __future__ import annotations

import textwrap

from gradcheck_lint.analysis.provenance import MODELLED, READ, Assumption, assumed, certainty, weakest
from gradcheck_lint.api import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Applicability, Certainty
from gradcheck_lint.registry import all_rules

ALL = Settings.default().with_enabled(all_rules())


def lint(text: str) -> list[tuple[str, str]]:
    return [(d.code, d.certainty.value) for d in check_source(textwrap.dedent(text), "train.py", settings=ALL)]


def test_chain_is_as_sure_as_its_weakest_fact() -> None:
    assert certainty([]) is Certainty.CERTAIN
    assert certainty([READ, MODELLED]) is Certainty.CERTAIN
    assert certainty([READ, assumed(Assumption.NAME), MODELLED]) is Certainty.POSSIBLE
    assert weakest([READ, MODELLED]) is MODELLED
    assert weakest([MODELLED, assumed(Assumption.OPAQUE)]).assumption is Assumption.OPAQUE


# The same missing clear, with the optimizer built in sight, then known only by its name.
BUILT = """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 2, 4):
    model(x).sum().backward()
    opt.step()
"""
NAMED = """
import torch
def train(model, optimizer, loader):
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
"""


def test_optimizer_built_in_sight_is_certain() -> None:
    assert lint(BUILT) == [("GL001", "certain")]


def test_optimizer_known_only_by_its_name_is_possible() -> None:
    """`optimizer` is a parameter, stepped and never cleared in sight: only its name says it is an
    optimizer (it could be a scheduler, a wrapper whose step clears): the finding rests on that."""
    assert lint(NAMED) == [("GL001", "possible")]


def test_possible_finding_has_no_safe_fix() -> None:
    found = check_source(textwrap.dedent(NAMED), "train.py", settings=ALL)
    assert found and all(d.fix is None or d.fix.applicability is Applicability.UNSAFE for d in found)


# An unscaled accumulated loss: computed in sight, then by a helper of another file (which may divide it).
LOSS_IN_SIGHT = """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 2, 4)):
    loss = model(x).pow(2).mean()
    loss.backward()
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
"""
LOSS_OUT_OF_SIGHT = """
import torch
from helpers import compute_loss
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 2, 4)):
    loss = compute_loss(model, x)
    loss.backward()
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
"""


def test_loss_read_in_sight_is_certain() -> None:
    assert lint(LOSS_IN_SIGHT) == [("GL003", "certain")]


def test_loss_of_an_unread_helper_is_possible() -> None:
    """What `compute_loss` of another file divided the loss by is not seen: GL003 rests on that."""
    assert lint(LOSS_OUT_OF_SIGHT) == [("GL003", "possible")]



# Outputs of a model stored across iterations without being backpropagated themselves: they hold a
# graph only if the model's forward made one. For a model handed in, that forward is out of sight
# (CodeBERT's CodeExecutor returns numbers under loss names); for one built in sight, it is read.
KEPT_OUTPUT = """
import torch
def train(model, opt, loader):
    outputs = []
    for x in loader:
        out = model(x)
        opt.zero_grad()
        out.mean().backward()
        opt.step()
        outputs.append(out)
"""


def test_output_of_a_model_handed_in_is_possibly_a_graph() -> None:
    assert lint(KEPT_OUTPUT) == [("GL008", "possible")]


def test_output_of_a_model_built_in_sight_is_surely_a_graph() -> None:
    built = KEPT_OUTPUT.replace("def train(model, opt, loader):", "def train(loader):\n    model = torch.nn.Linear(4, 1)\n"
                                "    opt = torch.optim.SGD(model.parameters(), lr=0.1)")
    assert lint(built) == [("GL008", "certain")]
