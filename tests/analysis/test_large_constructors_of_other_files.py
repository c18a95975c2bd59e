"""A constructor of another file that touches no gradient is followed whatever its size: what it builds (which model
an optimizer steps) is what a finding in the loop rests on. cde-offline-rl's learner sets `self.e_optim` over
`self.e_network` in an `__init__` of 450 nodes, over the size limit for other inert functions, and its GL009 (a weight
from the e-network's forward, kept across `e_optim.step()` and backpropagated through) was missed (lockbox 24)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.engine import analyse_text
from support import project_tree

SETTINGS = "\n".join(f"        self.setting_{i} = config.get('setting_{i}', {i}) * 2 + len(str(config))" for i in range(60))

LEARNER = f"""\
import torch
from torch import nn


class Learner:
    def __init__(self, config):
{SETTINGS}
        self.e_network = nn.Linear(8, 1)
        self.e_optim = torch.optim.Adam(self.e_network.parameters())
        self.policy = nn.Linear(8, 4)
        self.policy_optim = torch.optim.Adam(self.policy.parameters())
"""

TRAIN = """\
from learner import Learner


def train(config, loader):
    learner = Learner(config)
    for obs, act in loader:
        w_e = learner.e_network(obs){detach}
        e_loss = (w_e - 1).pow(2).mean()
        learner.e_optim.zero_grad()
        e_loss.backward(retain_graph=True)
        learner.e_optim.step()
        policy_loss = -(w_e * learner.policy(obs).log_softmax(-1)).mean()
        learner.policy_optim.zero_grad()
        policy_loss.backward()
        learner.policy_optim.step()
"""


@pytest.mark.parametrize("detach, reported", [("", True), (".detach()", False)], ids=["stale-weight", "detached-weight"])
def test_a_large_inert_constructor_of_another_file_is_followed(tmp_path: Path, detach: str, reported: bool) -> None:
    root = project_tree(tmp_path, {"learner.py": LEARNER, "train.py": TRAIN.format(detach=detach)})
    text = (root / "train.py").read_text()
    found = [d.span.line for d in analyse_text(text, str(root / "train.py")).diagnostics if d.code == "GL009"]
    assert bool(found) == reported, found
