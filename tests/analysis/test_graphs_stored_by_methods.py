"""Graphs a module's own method stores on `self` (`self.memory.append(transition)`) are what the caller reads
back as `net.memory`, not a submodule of the network; a loop over that list walks the object it was given,
so a graph an earlier iteration's step made stale is stale in the next (ActorCritic of RL-Algorithms, lockbox
20: per-transition `backward(retain_graph=True)` and `optimizer.step()` over a rollout's probabilities)."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

ACTOR_CRITIC = """
import torch
from torch import nn, optim


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
        self.critic = nn.Linear(4, 1)
        self.memory = []

    def save_memory(self, transition):
        self.memory.append(transition)

    def sample_action(self, state):
        prob = torch.softmax(self.actor(state), dim=1)
        action = int(torch.argmax(prob))
        return action, prob[0, action]


def train(net, optimizer, gamma):
{train}
    net.memory = []


net = ActorCritic()
optimizer = optim.Adam(net.parameters(), lr=1e-3)
for episode in range(100):
    s = torch.randn(1, 4)
    for t in range(200):
        a, a_prob = net.sample_action(s)
        s_next, reward, done = torch.randn(1, 4), 1.0, t == 199
        net.save_memory((a_prob, reward, s, s_next, 0.0 if done else 1.0))
        s = s_next
        if done:
            train(net, optimizer, 0.95)
            break
"""

PER_TRANSITION = """
    for prob, reward, s, s_next, mask in {memory}:
        advantage = reward + gamma * net.critic(s_next) * mask - net.critic(s)
        loss = -torch.log(prob) * advantage.detach() + 0.5 * advantage ** 2
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()
"""

SUMMED = """
    losses = []
    for prob, reward, s, s_next, mask in {memory}:
        advantage = reward + gamma * net.critic(s_next) * mask - net.critic(s)
        losses.append(-torch.log(prob) * advantage.detach() + 0.5 * advantage ** 2)
    optimizer.zero_grad()
    torch.stack(losses).sum().backward()
    optimizer.step()
"""


def _gl009(train: str) -> list[tuple[int, str]]:
    source = textwrap.dedent(ACTOR_CRITIC).replace("{train}", textwrap.indent(textwrap.dedent(train), "    ").rstrip())
    found = check_source(source, "actor_critic.py", settings=Settings.default())
    return [(d.span.line, d.certainty.name) for d in found if d.code == "GL009"]


def test_a_step_per_transition_over_graphs_a_method_stored_on_self_is_found() -> None:
    assert _gl009(PER_TRANSITION.format(memory="net.memory")) == [(28, "CERTAIN")]


def test_the_same_list_read_into_a_local_first_is_found_alike() -> None:
    train = "\n    memory = net.memory" + PER_TRANSITION.format(memory="memory")
    assert _gl009(train) == [(29, "CERTAIN")]


def test_one_backward_of_the_summed_losses_before_the_step_is_no_finding() -> None:
    assert _gl009(SUMMED.format(memory="net.memory")) == []
