"""GL005 is certain only where the polluted model holds a pass of its own that only its optimizer applies
(the discriminator's `d_loss`): the other model's loss that also reached it is then a leak. A shared part
trained by every loss that reaches it (an embedding under a critic and an actor, cleared with the critic
before the critic's backward and stepped with the actor after the actor's) holds no such pass: whether the
critic's loss is meant to train it is the author's intent, so the finding is `possible`."""

from __future__ import annotations

from gradcheck_lint.api import check_source
from gradcheck_lint.diagnostics import Certainty

SHARED = '''
import torch
from torch import nn

embedding = nn.Embedding(100, 8)
actor = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4), nn.Tanh())
critic = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 1))
embedding_optimizer = torch.optim.Adam(embedding.parameters(), lr=1e-3)
actor_optimizer = torch.optim.Adam(actor.parameters(), lr=1e-3)
critic_optimizer = torch.optim.Adam(critic.parameters(), lr=1e-3)

for _ in range(100):
    ids = torch.randint(0, 100, (32,))
    actions = torch.randn(32, 4)
    target_q = torch.randn(32, 1)

    embedding_optimizer.zero_grad()
    critic_optimizer.zero_grad()
    states = embedding(ids)
    q_values = critic(torch.cat([states, actions], dim=1))
    critic_loss = nn.functional.mse_loss(q_values, target_q)
    critic_loss.backward()
    critic_optimizer.step()

    actor_optimizer.zero_grad()
    states = embedding(ids)
    actor_loss = -critic(torch.cat([states, actor(states)], dim=1)).mean()
    actor_loss.backward()
    actor_optimizer.step()
    embedding_optimizer.step()
'''

GAN = '''
import torch
from torch import nn

G = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
D = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
opt_G = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_D = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
for real in torch.randn(10, 8, 4):
    opt_G.zero_grad()
    opt_D.zero_grad()
    fake = G(torch.randn(8, 8))
    g_loss = bce(D(fake), torch.ones(8, 1))
    g_loss.backward()
    opt_G.step()
    d_loss = bce(D(real), torch.ones(8, 1)) + bce(D(fake.detach()), torch.zeros(8, 1))
    d_loss.backward()
    opt_D.step()
'''


def gl005(source: str) -> list[tuple[int, Certainty]]:
    return [(d.span.line, d.certainty) for d in check_source(source, "train.py") if d.code == "GL005"]


def line_of(source: str, needle: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if needle in line)


def test_a_shared_embedding_stepped_with_the_actor_is_possible_only() -> None:
    assert gl005(SHARED) == [(line_of(SHARED, "embedding_optimizer.step()"), Certainty.POSSIBLE)]


def test_a_discriminator_with_its_own_loss_stays_certain() -> None:
    assert gl005(GAN) == [(line_of(GAN, "opt_D.step()"), Certainty.CERTAIN)]


def test_the_shared_embedding_cleared_after_the_critic_is_clean() -> None:
    fixed = SHARED.replace("    embedding_optimizer.zero_grad()\n    critic_optimizer.zero_grad()\n",
                           "    critic_optimizer.zero_grad()\n").replace(
        "    actor_optimizer.zero_grad()\n", "    actor_optimizer.zero_grad()\n    embedding_optimizer.zero_grad()\n")
    assert gl005(fixed) == []
