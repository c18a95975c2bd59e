"""A parameter a helper adds into in place (`log_pi -= ...` in SAC's `squash(mu, pi, log_pi)`) is the caller's object:
when the caller is a function the training loop calls and binds that name afresh at each of its calls (`log_pi =
gaussian_logprob(noise, log_std)` in the actor's `forward`), the object lives for one call, not across the loop's
iterations (lockbox 22's policy-adaptation-during-deployment: a false certain GL008, after its opening). A running
total the caller keeps on its object is handed on across the iterations and still grows."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = '''
import torch
import torch.nn.functional as F
from torch import nn


def gaussian_logprob(noise, log_std):
    return (-0.5 * noise.pow(2) - log_std).sum(-1, keepdim=True)


def squash(mu, pi, log_pi):
    mu = torch.tanh(mu)
    pi = torch.tanh(pi)
    if log_pi is not None:
        log_pi -= torch.log(F.relu(1 - pi.pow(2)) + 1e-6).sum(-1, keepdim=True)
    return mu, pi, log_pi


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(4, 4)
        self.running = torch.zeros(1)

    def forward(self, obs, compute_log_pi=True):
        mu, log_std = self.trunk(obs).chunk(2, dim=-1)
        noise = torch.randn_like(mu)
        pi = mu + noise * log_std.exp()
        if compute_log_pi:
            log_pi = gaussian_logprob(noise, log_std)
        else:
            log_pi = None
        mu, pi, log_pi = squash(mu, pi, HANDED)
        return mu, pi, log_pi


def train(batches):
    actor = Actor()
    optimizer = torch.optim.Adam(actor.parameters(), lr=3e-4)
    for obs in batches:
        _, pi, logp = actor(obs)
        loss = (0.1 * logp - pi.sum(-1, keepdim=True)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''


def gl008(text: str) -> list[int]:
    return [d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"]


def test_a_local_the_caller_binds_at_each_call_lives_for_one_call() -> None:
    assert gl008(SOURCE.replace("HANDED", "log_pi")) == []


def test_a_total_the_caller_keeps_on_its_object_grows() -> None:
    text = SOURCE.replace("HANDED", "self.running")
    assert gl008(text) == [next(n for n, line in enumerate(text.splitlines(), 1) if "log_pi -=" in line)]
