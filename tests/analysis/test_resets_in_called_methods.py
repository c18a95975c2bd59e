"""A rollout buffer filled each step and emptied by a method the loop calls (`memory.clear_memory()` with
`del self.logprobs[:]`; `model.train_net()` calling `self.make_batch()`, which rebinds `self.data = []`)
holds one rollout's graphs, not the run's: GL008 stays silent, as for a buffer emptied in the loop itself
(Popular-RL-Algorithms' PPO scripts, on the development sweep). A method that empties nothing leaves it."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

PPO = """\
import torch
from torch import nn
from torch.distributions import Normal


class Memory:
    def __init__(self):
        self.logprobs = []

    def clear_memory(self):
        {clear}


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.actor = nn.Linear(4, 2)
        self.optimizer = torch.optim.Adam(self.actor.parameters())

    def act(self, state, memory):
        dist = Normal(self.actor(state), 1.0)
        action = dist.sample()
        memory.logprobs.append(dist.log_prob(action))
        return action.detach()

    def update(self, memory):
        old = torch.stack(memory.logprobs).detach()
        loss = -(self.actor(torch.randn(4)).sum() - old.sum())
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


policy, memory = Policy(), Memory()
step = 0
for t in range(10000):
    step += 1
    policy.act(torch.randn(4), memory)
    if step % 400 == 0:
        policy.update(memory)
        memory.clear_memory()
"""


@pytest.mark.parametrize("clear", ["del self.logprobs[:]", "self.logprobs = []", "self.logprobs.clear()"])
def test_a_buffer_a_called_method_empties_is_not_kept(clear: str) -> None:
    assert [d.code for d in check_source(PPO.format(clear=clear), "ppo.py")] == []


def test_a_buffer_no_method_empties_is_gl008() -> None:
    found = check_source(PPO.format(clear="print(len(self.logprobs))"), "ppo.py")
    assert [(d.code, d.span.line) for d in found] == [("GL008", 23)]
