"""GL005's second reading: whose a backward pass is, told by the clear made for it (analysis/issued_for.py).
A clear that discards the own pass's share in the other model is certain; a clear that only readies the
other model right before its pass is the weaker witness (possible: the pass may be meant to train both)."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Certainty

HEAD = """
import torch
from torch import nn
policy, critic = nn.Linear(3, 1), nn.Linear(4, 1)
opt_pi = torch.optim.Adam(policy.parameters())
opt_q = torch.optim.Adam(critic.parameters())
batches = [(torch.randn(8, 3), torch.randn(8, 1), torch.randn(8, 1))]
"""


def _gl005(body: str) -> list[tuple[int, Certainty, str]]:
    found = check_source(HEAD + textwrap.dedent(body), "train.py", settings=Settings.default())
    return [(d.span.line, d.certainty, d.message) for d in found if d.code == "GL005"]


SAC = """
for obs, act, target in batches:
    opt_q.zero_grad()
    q_loss = ((critic(torch.cat([obs, act], 1)) - target) ** 2).mean()
    q_loss.backward()
    opt_pi.zero_grad()
    {between}pi_loss = -critic(torch.cat([obs, policy(obs)], 1)).mean()
    pi_loss.backward()
    opt_q.step()
    opt_pi.step()
"""


def test_clear_right_before_the_other_pass_is_a_possible_witness() -> None:
    found = _gl005(SAC.format(between=""))
    assert [(line, c) for line, c, _ in found] == [(16, Certainty.POSSIBLE)]
    assert "cleared that model right before it" in found[0][2] and "`q_loss.backward()`" in found[0][2]


def test_another_backward_between_the_clear_and_the_pass_is_no_witness() -> None:
    # the clear no longer readies the policy for `pi_loss` alone
    body = SAC.format(between="policy(obs).pow(2).mean().backward()\n    ")
    assert _gl005(body) == []


def test_critic_frozen_during_the_policy_pass_is_silent() -> None:
    body = SAC.replace("    pi_loss.backward()\n", "    critic.requires_grad_(False)\n    pi_loss.backward()\n    critic.requires_grad_(True)\n")
    body = body.replace("    {between}pi_loss = -critic(", "    critic.requires_grad_(False)\n    pi_loss = -critic(")
    assert _gl005(body.format(between="")) == []


def test_policy_loss_that_never_reaches_the_critic_is_silent() -> None:
    body = SAC.format(between="").replace("-critic(torch.cat([obs, policy(obs)], 1)).mean()", "policy(obs).pow(2).mean()")
    assert _gl005(body) == []


def test_clear_that_discards_the_own_pass_share_is_certain() -> None:
    # VQGAN's order: the generator's loss also reaches the discriminator, whose clear throws that share away
    found = _gl005("""
for obs, act, target in batches:
    opt_pi.zero_grad()
    pi_loss = -critic(torch.cat([obs, policy(obs)], 1)).mean()
    pi_loss.backward(retain_graph=True)
    opt_q.zero_grad()
    q_loss = ((critic(torch.cat([obs, policy(obs)], 1)) - target) ** 2).mean()
    q_loss.backward()
    opt_pi.step()
    opt_q.step()
""")
    assert [(line, c) for line, c, _ in found] == [(16, Certainty.CERTAIN)]
    assert "discarding what `pi_loss.backward(" in found[0][2]
