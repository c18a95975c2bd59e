"""Optimizers imported from the module that defines them (`from torch.optim.adam import Adam`, as older RL code
does) are the optimizers `torch.optim.Adam` names: lockbox 28's SAC agent stepped its critics through such an
`Adam`, which the analysis read as a call of nothing it knew (no parameters), and missed the backward through the
critics' graph after their steps (GL009)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

SAC = """\
import torch
import torch.nn as nn
{imports}

critic = nn.Linear(6, 1)
policy = nn.Linear(4, 2)
critic_opt = {make}(critic.parameters(), lr=3e-4)
policy_opt = {make}(policy.parameters(), lr=3e-4)
for states in torch.randn(10, 8, 4):
    actions = policy(states)
    q = critic(torch.cat([states, actions], 1))
    critic_loss = (q - 1.0).pow(2).mean()
    critic_opt.zero_grad()
    critic_loss.backward(retain_graph=True)
    critic_opt.step()
    policy_loss = -q.mean()
    policy_opt.zero_grad()
    policy_loss.backward()
    policy_opt.step()
"""


@pytest.mark.parametrize(("imports", "make"), [
    ("from torch.optim.adam import Adam", "Adam"),
    ("import torch.optim.adamw", "torch.optim.adamw.AdamW"),
    ("from torch.optim import Adam", "Adam"),
])
def test_the_backward_through_the_critics_stepped_graph_is_found(imports: str, make: str) -> None:
    found = [(d.line, d.code, d.possible) for d in check_source(SAC.format(imports=imports, make=make))]
    assert (18, "GL009", False) in found


def test_the_functional_form_of_the_same_module_builds_no_optimizer() -> None:
    text = SAC.format(imports="from torch.optim.adam import adam", make="adam")
    assert [d.code for d in check_source(text) if d.code == "GL009"] == []
