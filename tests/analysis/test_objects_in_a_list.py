"""Objects of a class read, kept in a list a loop fills (`self.agents = []`, then `self.agents.append(DDPGAgent(...))`
on each iteration), are objects of that class when a member is used: `self.agents[i].step(obs, explore)` runs
`DDPGAgent.step` (an action picked), never an optimizer's step. The list met at the loop's exit (empty on one path,
of such objects on the other) keeps the class (`values._joined_instance`, `values.appended_to`), and a mixin of
another file calling the method finds the checked file's class (`ProjectView.class_named`). Before, the list's
member was read as the bag of an agent's attributes, whose optimizers "stepped" there (YqyReinforcementLearningModule,
lockbox 32: eight certain GL001/GL003)."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

AGENTS = 'import torch\nfrom torch import nn\n\n\nclass DDPGAgent:\n    def __init__(self, lr):\n        self.actor = nn.Linear(4, 2)\n        self.critic = nn.Linear(6, 1)\n        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr)\n        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr)\n\n    def step(self, obs, explore):\n        action = self.actor(obs)\n        if explore:\n            action = action + torch.randn_like(action)\n        return action.clamp(-1, 1)\n\n\nclass MultiAgent:\n    def __init__(self, n, k=2):\n        self.agents = []\n        for _ in range(n):\n            ag = DDPGAgent(1e-3)\n            self.agents.append(ag)\n        self.n = n\n        self.k = k\n        self.count = 0\n\n    def act(self, state, explore):\n        return [self.agents[i].step(state[i], explore).detach() for i in range(self.n)]\n\n    def learn(self, s):\n        self.count += 1\n        for i in range(self.n):\n            actor_loss = -self.agents[i].actor(s).mean() / self.k\n            actor_loss.backward()\n            if self.count % self.k == 0:\n                self.agents[i].actor_optimizer.step()\n                self.agents[i].actor_optimizer.zero_grad()\n\n\ndef run(env, episodes):\n    agent = MultiAgent(3)\n    for e in range(episodes):\n        state = env.reset()\n        for t in range(100):\n            actions = agent.act(state, t < 50)\n            state = env.step(actions)\n            agent.learn(torch.randn(8, 4))\n\n\nif __name__ == "__main__":\n    run(None, 10)\n'
MIXIN = 'class ActingMixin:\n    def act(self, state, explore):\n        return [self.agents[i].step(state[i], explore).detach() for i in range(self.n)]\n'
MULTI = 'import torch\nfrom torch import nn\nfrom mixins import ActingMixin\n\n\nclass DDPGAgent:\n    def __init__(self, lr):\n        self.actor = nn.Linear(4, 2)\n        self.critic = nn.Linear(6, 1)\n        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr)\n        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr)\n\n    def step(self, obs, explore):\n        action = self.actor(obs)\n        if explore:\n            action = action + torch.randn_like(action)\n        return action.clamp(-1, 1)\n\n\nclass MultiAgent(ActingMixin):\n    def __init__(self, n, k=2):\n        self.agents = []\n        for _ in range(n):\n            ag = DDPGAgent(1e-3)\n            self.agents.append(ag)\n        self.n = n\n        self.k = k\n        self.count = 0\n\n    def learn(self, s):\n        self.count += 1\n        for i in range(self.n):\n            actor_loss = -self.agents[i].actor(s).mean() / self.k\n            actor_loss.backward()\n            if self.count % self.k == 0:\n                self.agents[i].actor_optimizer.step()\n                self.agents[i].actor_optimizer.zero_grad()\n\n\ndef run(env, episodes):\n    agent = MultiAgent(3)\n    for e in range(episodes):\n        state = env.reset()\n        for t in range(100):\n            actions = agent.act(state, t < 50)\n            state = env.step(actions)\n            agent.learn(torch.randn(8, 4))\n\n\nif __name__ == "__main__":\n    run(None, 10)\n'


def test_a_member_of_a_list_of_agents_runs_the_agents_own_step() -> None:
    found = check_source(AGENTS, "agents.py", settings=Settings.default())
    assert [(d.span.line, d.code) for d in found] == []


def test_the_agents_real_optimizer_step_is_still_read() -> None:
    # the window the agents' optimizers accumulate is still checked: an undivided loss is GL003
    text = AGENTS.replace("actor_loss = -self.agents[i].actor(s).mean() / self.k",
                          "actor_loss = -self.agents[i].actor(s).mean()")
    found = check_source(text, "agents.py", settings=Settings.default())
    assert [d.code for d in found] == ["GL003"]


def test_a_mixin_of_another_file_runs_the_agents_own_step(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"mixins.py": MIXIN, "agents.py": MULTI})
    found = lint_files([str(root / "agents.py")], Settings.default())
    assert [(d.line, d.code) for d in found if d.code != "GL000"] == []
