"""Two shapes of RL rollout code that keep log-probabilities with their graphs on purpose, for the episode's
backward (DeepRL-Chinese's REINFORCE and A2C, five false certain GL008 of lockbox 22, found after its opening):
- a list attribute of a `Rollout` object filled by its `put` method, the object bound anew (`rollout = Rollout()`)
  at each episode's end: the list goes with its object;
- a dict keyed by the agent a loop walks (`logp[agent] = logp_action`): the agents come round again and overwrite
  their slots, or not; that is not read, so the finding is `possible`.
A list attribute of an object made once for the run, and a dict keyed by a step count, still grow."""

from __future__ import annotations

from gradcheck_lint.api import check_source
from gradcheck_lint.diagnostics import Certainty

ROLLOUT = '''
import torch
from torch import nn

policy = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)


class Rollout:
    def __init__(self):
        self.logp_lst = []
        self.reward_lst = []

    def put(self, logp, reward):
        self.logp_lst.append(logp)
        self.reward_lst.append(reward)

    def tensors(self):
        return self.logp_lst, torch.tensor(self.reward_lst)


def policy_loss(blogp, returns):
    loss = 0
    for i, lp in enumerate(blogp):
        loss += -lp * returns[i]
    return loss


def train(env, max_steps):
    rollout = Rollout()
    state = env.reset()
    for step in range(max_steps):
        dist = torch.distributions.Categorical(logits=policy(torch.as_tensor(state).float()))
        action = dist.sample()
        state, reward, done = env.step(action.item())
        rollout.put(dist.log_prob(action), reward)
        if done:
            blogp, rewards = rollout.tensors()
            loss = policy_loss(blogp, rewards.flip(0).cumsum(0).flip(0))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            state = env.reset()
            RESET
'''

KEYED = '''
import torch
from torch import nn

policy = nn.Linear(4, 2)
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)


def train(env, episodes):
    for episode in range(episodes):
        logp = {}
        for i, agent in KEYS:
            dist = torch.distributions.Categorical(logits=policy(torch.randn(4)))
            action = dist.sample()
            logp[SLOT] = dist.log_prob(action)
            reward = env.step(action.item())
            loss = -dist.log_prob(action) * reward
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print({k: float(v) for k, v in logp.items()})
'''


def gl008(source: str) -> list[Certainty]:
    return [d.certainty for d in check_source(source, "train.py") if d.code == "GL008"]


def test_a_list_of_an_object_bound_anew_each_episode_is_dropped_with_it() -> None:
    assert gl008(ROLLOUT.replace("RESET", "rollout = Rollout()")) == []


def test_a_list_of_an_object_made_once_for_the_run_grows() -> None:
    assert gl008(ROLLOUT.replace("RESET", "pass")) == [Certainty.CERTAIN]


def test_a_dict_keyed_by_what_a_loop_walks_may_overwrite_its_slots() -> None:
    assert gl008(KEYED.replace("KEYS", "enumerate(env.agent_iter())").replace("SLOT", "agent")) == [Certainty.POSSIBLE]


def test_a_dict_keyed_by_a_step_count_grows() -> None:
    assert gl008(KEYED.replace("KEYS", "enumerate(env.agent_iter())").replace("SLOT", "i")) == [Certainty.CERTAIN]
