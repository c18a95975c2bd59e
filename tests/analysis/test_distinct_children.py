"""Distinct children of one module are distinct parameter sets: the two Q heads of a SAC critic
(`self.critic.Q1` / `.Q2` of a class read, `self.critics[0]` / `[1]` of an `nn.ModuleList`) each stepped by
its own optimizer, while the parent still holds them all (a step over `critic.parameters()` changes both
heads, `critic.zero_grad()` clears both)."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


TWIN = """\
import torch
import torch.nn.functional as F
from torch import nn


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.Q1 = nn.Linear(6, 1)
        self.Q2 = nn.Linear(6, 1)


class Agent:
    def __init__(self):
        self.policy = nn.Linear(4, 2)
        self.critic = Twin()
        self.policy_opt = torch.optim.Adam(self.policy.parameters())
        self.q1_opt = torch.optim.Adam(self.critic.Q1.parameters())
        self.q2_opt = torch.optim.Adam(self.critic.Q2.parameters())

    def update(self, batches):
        for s, target in batches:
            sa = torch.cat([s, self.policy(s)], -1)
            policy_loss = {policy_loss}
            q1_loss = F.mse_loss(self.critic.Q1(sa.detach()), target)
            q2_loss = F.mse_loss(self.critic.Q2(sa.detach()), target)
            self.q1_opt.zero_grad()
            q1_loss.backward()
            self.q1_opt.step()
            self.q2_opt.zero_grad()
            q2_loss.backward()
            self.q2_opt.step()
            self.policy_opt.zero_grad()
            policy_loss.backward()
            self.policy_opt.step()
"""
BOTH_HEADS = "-torch.min(self.critic.Q1(sa), self.critic.Q2(sa)).mean()"


def test_each_head_stepped_by_its_own_optimizer_is_no_stale_graph_for_the_other() -> None:
    """The second head's own loss went through no parameter the first head's step changed."""
    assert found(TWIN.format(policy_loss="-self.policy(s).sum()")) == []


def test_a_policy_loss_through_both_heads_after_both_steps_is_still_stale() -> None:
    assert found(TWIN.format(policy_loss=BOTH_HEADS)) == [("GL009", 34, "certain")]  # a linear head saves its weight


def test_a_loss_through_one_head_after_that_head_steps_is_stale() -> None:
    text = TWIN.format(policy_loss="-self.critic.Q2(sa).mean()")
    assert found(text) == [("GL009", 34, "certain")]
    [d] = analyse_text(text, "train.py").diagnostics
    assert "`self.q2_opt.step()` at line 32 changed `self.critic.Q2`'s parameters" in d.message


PARENT = """\
import torch
import torch.nn.functional as F
from torch import nn


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.Q1 = nn.Linear(6, 1)
        self.Q2 = nn.Linear(6, 1)


critic = Twin()
critics = nn.ModuleList([nn.Linear(6, 1), nn.Linear(6, 1)])
critic_opt = torch.optim.Adam({whole}.parameters())
q2_opt = torch.optim.Adam({head}.parameters())
for s, target in torch.randn(8, 2, 4, 6):
    first = F.mse_loss({other}(s), target)
    second = F.mse_loss({head}(s), target)
    critic_opt.zero_grad(set_to_none=False)  # zeros, not None: the step updates every child it holds
    first.backward()
    critic_opt.step()
    q2_opt.zero_grad()
    second.backward()
    q2_opt.step()
"""


def test_a_step_over_the_parent_changes_every_child() -> None:
    for whole, other, head in (("critic", "critic.Q1", "critic.Q2"), ("critics", "critics[0]", "critics[1]")):
        assert found(PARENT.format(whole=whole, other=other, head=head)) == [("GL009", 24, "certain")], whole


def test_a_step_over_one_child_leaves_the_other_child_alone() -> None:
    for whole, other, head in (("critic.Q1", "critic.Q1", "critic.Q2"), ("critics[0]", "critics[0]", "critics[1]")):
        assert found(PARENT.format(whole=whole, other=other, head=head)) == [], whole


LIST = """\
import torch
import torch.nn.functional as F
from torch import nn


class Agent:
    def __init__(self):
        self.policy = nn.Linear(4, 2)
        self.critics = nn.ModuleList([nn.Linear(6, 1), nn.Linear(6, 1)])
        self.policy_opt = torch.optim.Adam(self.policy.parameters())
        self.critic_opts = [torch.optim.Adam(self.critics[0].parameters()), torch.optim.Adam(self.critics[1].parameters())]

    def _perform_update(self, loss, opt, net):
        opt.zero_grad()
        loss.backward()
        opt.step()

    def update(self, batches):
        for s, target in batches:
            sa = torch.cat([s, self.policy(s)], -1)
            policy_loss = {policy_loss}
            q1_loss = F.mse_loss(self.critics[0](sa.detach()), target)
            q2_loss = F.mse_loss(self.critics[1](sa.detach()), target)
            self._perform_update(q1_loss, self.critic_opts[0], self.critics[0])
            self._perform_update(q2_loss, self.critic_opts[1], self.critics[1])
            self._perform_update(policy_loss, self.policy_opt, self.policy)
"""


def test_members_of_a_module_list_stepped_one_after_the_other() -> None:
    assert found(LIST.format(policy_loss="-self.policy(s).sum()")) == []


def test_a_loss_through_both_members_after_their_steps_is_stale() -> None:
    text = LIST.format(policy_loss="-torch.min(self.critics[0](sa), self.critics[1](sa)).mean()")
    assert found(text) == [("GL009", 15, "certain")]
    [d] = analyse_text(text, "train.py").diagnostics
    assert "changed `self.critics[0]`'s parameters" in d.message  # the member, named as the code names it


def test_a_module_list_of_one_module_made_many_times_stays_one_set() -> None:
    """`nn.ModuleList([nn.Linear(6, 1) for _ in range(2)])`: the members are not seen apart, any index is
    any member (the second head's loss is still read as stale: not seen, not assumed away)."""
    text = LIST.replace("nn.ModuleList([nn.Linear(6, 1), nn.Linear(6, 1)])", "nn.ModuleList([nn.Linear(6, 1) for _ in range(2)])")
    assert [c for c, _l, _k in found(text.format(policy_loss="-self.policy(s).sum()"))] == ["GL009"]


def test_clearing_the_container_clears_every_member() -> None:
    text = """\
import torch
import torch.nn.functional as F
from torch import nn

critics = nn.Sequential(nn.Linear(6, 1), nn.Linear(6, 1))
c0_opt = torch.optim.Adam(critics[0].parameters())
c1_opt = torch.optim.Adam(critics[1].parameters())
for s, target in torch.randn(8, 2, 4, 6):
    {clear}.zero_grad()
    F.mse_loss(critics[0](s), target).backward()
    F.mse_loss(critics[1](s), target).backward()
    c0_opt.step()
    c1_opt.step()
"""
    assert found(text.format(clear="critics")) == []
    assert [(c, line) for c, line, _k in found(text.format(clear="critics[0]"))] == [("GL001", 13)]  # the first member only


UTILS = """\
def update_params(optim, network, loss):
    optim.zero_grad()
    loss.backward()
    optim.step()
"""
AGENT = """\
import torch
from torch import nn
from utils import update_params


class Agent:
    def __init__(self):
        self.policy = nn.Linear(4, 2)
        self.critics = nn.ModuleList([nn.Linear(6, 1), nn.Linear(6, 1)])
        self.policy_optim = torch.optim.Adam(self.policy.parameters())
        self.q1_optim = torch.optim.Adam(self.critics[0].parameters())
        self.q2_optim = torch.optim.Adam(self.critics[1].parameters())

    def learn(self, batches):
        for s, target in batches:
            sa = torch.cat([s, self.policy(s)], -1)
            policy_loss = -torch.min(self.critics[0](sa), self.critics[1](sa)).mean()
            q1_loss = (self.critics[0](sa.detach()) - target).pow(2).mean()
            q2_loss = (self.critics[1](sa.detach()) - target).pow(2).mean()
            update_params(self.q1_optim, self.critics[0], q1_loss)
            update_params(self.q2_optim, self.critics[1], q2_loss)
            update_params(self.policy_optim, self.policy, policy_loss)
"""


def test_a_stale_backward_in_a_helper_of_another_file_is_reported_at_the_call_that_ran_it(tmp_path: Path) -> None:
    """slac's `update_params` of utils.py, called for each head and then for the policy: the stale graph is
    the policy's, reported at its call (line 22), not at the helper's first call (line 20)."""
    root = project_tree(tmp_path, {"utils.py": UTILS, "agent.py": AGENT})
    report = analyse_text(AGENT, str(root / "agent.py"), Settings.default())
    assert [(d.code, d.line) for d in report.diagnostics] == [("GL009", 22)]
    assert "utils.py:3" in report.diagnostics[0].message


CALLED_ONCE = """\
import torch
import torch.nn.functional as F
from torch import nn


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.Q1 = nn.Linear(6, 1)
        self.Q2 = nn.Linear(6, 1){extra}

    def forward(self, s, a):
        x = torch.cat([s, a], -1)
        return {returns}


class Agent:
    def __init__(self):
        self.policy = nn.Linear(4, 2)
        self.critic = Twin()
        self.policy_opt = torch.optim.Adam(self.policy.parameters())
        self.q1_opt = torch.optim.Adam(self.critic.Q1.parameters())
        self.q2_opt = torch.optim.Adam(self.critic.Q2.parameters())

    def update(self, batches):
        for s, target in batches:
            q1, q2 = self.critic(s, torch.zeros(8, 2))
            pq1, pq2 = self.critic(s, self.policy(s))
            policy_loss = -torch.min(pq1, pq2).mean()
            q1_loss = F.mse_loss(q1, target)
            q2_loss = F.mse_loss(q2, target)
            self.q1_opt.zero_grad()
            q1_loss.backward()
            self.q1_opt.step()
            self.q2_opt.zero_grad()
            q2_loss.backward()
            self.q2_opt.step()
            self.policy_opt.zero_grad()
            policy_loss.backward()
            self.policy_opt.step()
"""


def test_the_parts_of_a_forward_returning_one_value_per_head_are_apart() -> None:
    """slac's `q1, q2 = self.critic(z, a)` of `return self.Q1(x), self.Q2(x)`: `q2`'s loss goes through Q2 alone;
    the policy's, through both heads after both steps, is stale."""
    text = CALLED_ONCE.format(extra="", returns="self.Q1(x), self.Q2(x)")
    assert found(text) == [("GL009", 39, "certain")]


def test_a_part_that_reached_every_head_keeps_them_all() -> None:
    text = CALLED_ONCE.format(extra="", returns="self.Q1(x), self.Q1(x) + self.Q2(x)")
    assert [line for _c, line, _k in found(text)] == [36, 39]  # `q2` went through Q1 too: stale after Q1's step


def test_a_part_reaching_a_parameter_of_the_module_itself_keeps_the_whole_module() -> None:
    """`x @ self.w` of an `nn.Parameter` of the critic: not a child the analysis tells apart, so the whole critic."""
    text = CALLED_ONCE.format(extra="\n        self.w = nn.Parameter(torch.zeros(6, 1))", returns="self.Q1(x), x @ self.w")
    assert [line for _c, line, _k in found(text)] == [37, 40]  # `q2_loss.backward()` (a line further down) is stale
