"""Settings `__init__` fixes once for the run (`analysis/worlds.py`): a trainer that builds other objects
for another setting and tests the setting again in its methods is analysed once per world, never with
the objects of one world on the paths of the other (issue 28, kind 1: paths that cannot happen)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source


def codes(text: str) -> list[tuple[int, str, str]]:
    return [(d.line, d.code, d.certainty.value) for d in check_source(text)]


# improved-diffusion's TrainLoop, in short: with fp16, the optimizer steps an fp32 master copy whose
# gradient is overwritten from the model's at each step; without, it steps the model's own parameters,
# which `zero_grad(self.model_params)` clears. Joined, the optimizer owned both, and a loss of unknown
# reach was taken to write the master copy on the fp32 path, where no clear covers it: a certain GL001.
TRAINER = """\
import torch
from torch import nn


def zero_grad(params):
    for p in params:
        if p.grad is not None:
            p.grad.zero_()


def master_copy(params):
    return [nn.Parameter(torch.cat([p.detach().float().view(-1) for p in params]))]


def model_grads_to_master_grads(params, master):
    master[0].grad = torch.cat([p.grad.float().view(-1) for p in params])


class TrainLoop:
    def __init__(self, model, data, use_fp16=False):
        self.model = model
        self.data = data
        self.use_fp16 = use_fp16
        self.model_params = list(model.parameters())
        self.master_params = self.model_params
        if self.use_fp16:
            self.master_params = master_copy(self.model_params)
        self.opt = torch.optim.AdamW(self.master_params, lr=1e-4)

    def run_loop(self):
        while True:
            batch = next(self.data)
{clear}            loss = self.losses(self.unknown_model, batch).mean()
            loss.backward()
            if {test}:
                model_grads_to_master_grads(self.model_params, self.master_params)
                self.opt.step()
            else:
                self.opt.step()
"""

TESTS = {"truth": "self.use_fp16", "none": "self.use_fp16 is not None"}


@pytest.mark.parametrize("test", TESTS.values(), ids=TESTS.keys())
def test_a_setting_fixed_in_init_is_one_world_per_run(test: str) -> None:
    assert codes(TRAINER.format(clear="            zero_grad(self.model_params)\n", test=test)) == []


def test_without_the_clear_the_fp32_world_steps_stale_gradients() -> None:
    found = codes(TRAINER.format(clear="", test="self.use_fp16"))
    assert (39, "GL001") in {(line, code) for line, code, _ in found}  # the fp32 world's step


def test_a_setting_some_method_changes_is_no_world() -> None:
    # `switch_precision` may turn fp16 on half-way: the run is not one world, the paths mix
    text = TRAINER.format(clear="            zero_grad(self.model_params)\n", test="self.use_fp16") + """
    def switch_precision(self):
        self.use_fp16 = True
"""
    assert [(line, code) for line, code, _ in codes(text)] == [(40, "GL001")]


# The same setting changes nothing `__init__` builds: one world, the methods analysed once as before.
SAME = """\
import torch


class Trainer:
    def __init__(self, model, loader, clip=False):
        self.model = model
        self.loader = loader
        self.clip = clip
        if self.clip:
            self.max_norm = 1.0
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(self):
        for x in self.loader:
            loss = self.model(x).mean()
            loss.backward()
            if self.clip:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_norm)
            self.opt.step()
"""


def test_a_setting_that_changes_no_object_still_reports_once() -> None:
    assert [(line, code) for line, code, _ in codes(SAME)] == [(19, "GL001")]


# An RL course's trainer (lockbox 30, kind 1): `__init__` builds one shared optimizer, aliased as the actor's
# and the critic's, on one arm of a test of a configuration, separate optimizers on the other; the update asks
# `hasattr(self, "optimizer")`, which is which arm `__init__` took. Mixed, the shared optimizer's alias was
# stepped twice on the arm of separate optimizers: a certain GL001 on a path no run has.
PRESENCE = """\
import torch
from torch import nn, optim


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.actor = nn.Linear(4, 2)
        self.critic = nn.Linear(4, 1)

    def forward(self, x):
        return self.actor(x), self.critic(x)


class Trainer:
    def __init__(self, config):
        self.actor_critic = ActorCritic()
        if config.shared_backbone or hasattr(self.actor_critic, "shared_backbone_net"):
            self.optimizer = optim.Adam(self.actor_critic.parameters(), lr=1e-3)
            self.actor_optimizer = self.optimizer
            self.critic_optimizer = self.optimizer
        else:
            self.actor_optimizer = optim.Adam(self.actor_critic.actor.parameters(), lr=1e-3)
            self.critic_optimizer = optim.Adam(self.actor_critic.critic.parameters(), lr=1e-3)

    def update(self, batch):
        logits, value = self.actor_critic(batch)
        loss = logits.pow(2).mean() + value.pow(2).mean()
        if {asked}:
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        else:
            self.actor_optimizer.zero_grad()
{critic_clear}            loss.backward()
            self.actor_optimizer.step()
            self.critic_optimizer.step()

    def train(self, batches):
        for batch in batches:
            self.update(batch)
"""
CRITIC_CLEAR = "            self.critic_optimizer.zero_grad()\n"


def test_an_attribute_one_arm_of_init_makes_is_the_arm_it_took() -> None:
    assert codes(PRESENCE.format(asked='hasattr(self, "optimizer")', critic_clear=CRITIC_CLEAR)) == []
    # the arms the other way round: the shared optimizer's world takes the arm that steps its alias twice
    found = codes(PRESENCE.format(asked='not hasattr(self, "optimizer")', critic_clear=CRITIC_CLEAR))
    assert (38, "GL001") in {(line, code) for line, code, _ in found}


def test_on_the_arm_of_separate_optimizers_a_missing_clear_is_still_found() -> None:
    found = codes(PRESENCE.format(asked='hasattr(self, "optimizer")', critic_clear=""))
    assert found == [(37, "GL001", "certain")]  # the critic's step


def test_an_attribute_another_method_also_makes_is_no_world() -> None:
    # `share()` may make `self.optimizer` later: its presence says nothing of `__init__`'s arm
    text = PRESENCE.format(asked='hasattr(self, "optimizer")', critic_clear=CRITIC_CLEAR) + """
    def share(self):
        self.optimizer = self.actor_optimizer
"""
    assert (38, "GL001") in {(line, code) for line, code, _ in codes(text)}  # the alias stepped twice
