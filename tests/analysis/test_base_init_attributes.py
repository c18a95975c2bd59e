"""A subclass's `self` holds what the base class's `__init__` it calls stores there (`super().__init__(...)`,
`Base.__init__(self, ...)`), in one file or across two (`calls._base_method`), and a module called
under any name runs its parameters (`Objects.called_whole`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.engine import analyse_text
from support import project_tree


def gl009(text: str, path: str = "learner.py") -> list[int]:
    return sorted(d.span.line for d in analyse_text(text, path).diagnostics if d.code == "GL009")


BASE = """\
import torch
from torch import nn


class SACLearner:
    def __init__(self, lr):
        self.lr = lr
        self._init_network()

    def _init_network(self):
        self.actor = nn.Linear(4, 2)
        self.qf_1 = nn.Linear(6, 1)
        self.actor_optim = torch.optim.Adam(self.actor.parameters(), lr=self.lr)
        self.qf_1_optim = torch.optim.Adam(self.qf_1.parameters(), lr=self.lr)
"""

# medipixel's SACfDLearner: `q_pred` is built through `qf_1` before `qf_1_optim.step()`, then the actor's
# loss backpropagates through it (line 20 of SUB; `{fresh}` recomputes it after the step)
SUB = """\
import torch
{imports}

class SACfDLearner(SACLearner):
    def __init__(self, lr):
        {init}
        self.use_n_step = False

    def update_model(self, states, actions, y):
        qf_1_loss = (self.qf_1(torch.cat((states, actions), -1)) - y).pow(2).mean()
        new_actions = self.actor(states)
        q_pred = self.qf_1(torch.cat((states, new_actions), -1))
        self.qf_1_optim.zero_grad()
        qf_1_loss.backward()
        self.qf_1_optim.step()
        {fresh}actor_loss = -q_pred.mean()
        self.actor_optim.zero_grad()
        actor_loss.backward()
        self.actor_optim.step()
"""
FRESH = "q_pred = self.qf_1(torch.cat((states, new_actions), -1))\n        "
INITS = ("super().__init__(lr)", "SACLearner.__init__(self, lr)", "super(SACfDLearner, self).__init__(lr)")


@pytest.mark.parametrize("init", INITS)
def test_the_base_init_a_subclass_calls_gives_it_the_networks_in_one_file(init: str) -> None:
    sub = SUB.format(imports="", init=init, fresh="")
    text = BASE + "\n" + sub
    offset = BASE.count("\n") + 1
    assert gl009(text) == [offset + 18]
    assert gl009(BASE + "\n" + SUB.format(imports="", init=init, fresh=FRESH)) == []


@pytest.mark.parametrize("init", INITS)
def test_the_base_init_of_another_file_gives_the_subclass_its_networks(tmp_path: Path, init: str) -> None:
    for case, fresh, expected in (("bug", "", [18]), ("ok", FRESH, [])):
        root = project_tree(tmp_path / case, {
            "base.py": BASE,
            "sub.py": SUB.format(imports="\nfrom base import SACLearner\n", init=init, fresh=fresh),
        })
        found = gl009((root / "sub.py").read_text(), str(root / "sub.py"))
        assert found == [e + 2 for e in expected], case


def test_what_the_subclass_sets_before_the_base_init_reaches_it() -> None:
    """`self.lr` set before `super().__init__()` is what the base's `_init_network` reads; attributes
    the subclass sets after the call replace the base's."""
    text = BASE.replace("    def __init__(self, lr):\n        self.lr = lr\n", "    def __init__(self):\n") + "\n" + """\
class Learner(SACLearner):
    def __init__(self, lr):
        self.lr = lr
        super().__init__()
        self.actor = nn.Linear(4, 2)
        self.actor_optim = torch.optim.Adam(self.actor.parameters())

    def update_model(self, states, y):
        pred = self.actor(states)
        loss_a = (pred - y).pow(2).mean()
        self.qf_1_optim.zero_grad()
        self.qf_1(torch.cat((states, states[:, :2]), -1)).mean().backward()
        self.qf_1_optim.step()
        self.actor_optim.zero_grad()
        loss_a.backward()
        self.actor_optim.step()
"""
    # the subclass's own actor is stepped by its own optimizer only: `qf_1_optim` leaves its graph alone
    assert gl009(text) == []


SHARED_BACKBONE = """\
import torch
from torch import nn


class Base:
    def __init__(self):
        self.qf_1 = nn.Sequential(self.backbone, nn.Linear(4, 1))
        self.actor = nn.Sequential(self.backbone, nn.Linear(4, 2))
        self.qf_1_optim = torch.optim.Adam(self.qf_1.parameters())
        self.actor_optim = torch.optim.Adam(self.actor.parameters())


class Learner(Base):
    def __init__(self):
        self.backbone = {backbone}
        super().__init__()

    def update_model(self, states, y):
        pred = self.actor(states)
        self.qf_1_optim.zero_grad()
        self.qf_1(states).mean().backward()
        self.qf_1_optim.step()
        self.actor_optim.zero_grad()
        (pred - y).pow(2).mean().backward()
        self.actor_optim.step()
"""


def test_the_base_init_builds_on_what_the_subclass_set_before_calling_it() -> None:
    """The subclass's backbone, set before `super().__init__()`, is in both of the base's networks:
    stepping the Q network's optimizer changes the graph of `pred`."""
    assert gl009(SHARED_BACKBONE.format(backbone="nn.Linear(4, 4)")) == [24]


def test_a_subclass_without_init_uses_the_networks_of_a_base_of_another_file(tmp_path: Path) -> None:
    """No `__init__` of its own: the base's, in another file, runs on its `self`; `self.qf_1(...)` runs
    `qf_1` though this file never assigns it a model."""
    for case, fresh, expected in (("bug", "", [16]), ("ok", FRESH, [])):
        sub = SUB.format(imports="\nfrom base import SACLearner\n", init="", fresh=fresh)
        sub = sub.replace("    def __init__(self, lr):\n        \n        self.use_n_step = False\n\n", "")
        root = project_tree(tmp_path / case, {"base.py": BASE, "sub.py": sub})
        assert gl009((root / "sub.py").read_text(), str(root / "sub.py")) == expected, case
