"""GL005's joint-training reading stops where a model holds a loss of its own: a discriminator with its own
`d_loss` pass, still unapplied, and the generator's loss that also reached it, both applied by `opt_G.step();
opt_D.step()` with no backward between (lockbox 8's vqgan-training bug, a miss). Reported as possible; one
loss reaching two models whose optimizers step together stays joint training."""

from __future__ import annotations

from gradcheck_lint.api import check_source
from gradcheck_lint.diagnostics import Certainty

GAN = '''
import torch
from torch import nn

G = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
D = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
opt_G = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_D = torch.optim.Adam(D.parameters(), lr=1e-3)
for real in torch.randn(10, 8, 4):
    z = torch.randn(8, 8)
    fake = G(z)
    d_loss = torch.relu(1 - D(real)).mean() + torch.relu(1 + D(fake.detach())).mean()
    d_loss.backward()
    g_loss = (fake - real).abs().mean() - D(fake).mean()
    g_loss.backward()
    opt_G.step()
    opt_G.zero_grad()
    opt_D.step()
    opt_D.zero_grad()
'''


def test_a_discriminator_with_its_own_pass_is_not_in_a_joint_objective() -> None:
    found = [(d.code, d.line, d.certainty) for d in check_source(GAN)]
    assert found == [("GL005", 18, Certainty.POSSIBLE)]
    message = next(d.message for d in check_source(GAN))
    assert "on top of those of its own `d_loss.backward()`" in message and "step `opt_D` before `g_loss.backward()`" in message


def test_the_fix_stepping_the_discriminator_first_is_clean() -> None:
    """D cleared before its own pass (the generator's loss left gradients there), stepped before the generator's."""
    fixed = GAN.replace("    d_loss.backward()\n", "    opt_D.zero_grad()\n    d_loss.backward()\n    opt_D.step()\n", 1)
    fixed = fixed.replace("    opt_G.zero_grad()\n    opt_D.step()\n    opt_D.zero_grad()\n", "    opt_G.zero_grad()\n")
    fixed = fixed.replace("    g_loss.backward()", "    opt_G.zero_grad()\n    g_loss.backward()")
    assert [d.code for d in check_source(fixed)] == []
    # without the clear before `d_loss.backward()`, what the generator's loss left in D is applied next batch
    leaky = fixed.replace("    opt_D.zero_grad()\n    d_loss.backward()", "    d_loss.backward()")
    assert [d.code for d in check_source(leaky)] == ["GL001", "GL005"]  # and D is never cleared at all


def test_one_loss_of_two_models_stepped_together_is_joint_training() -> None:
    joint = """
import torch
from torch import nn
enc, dec = nn.Linear(4, 2), nn.Linear(2, 4)
opt_e = torch.optim.Adam(enc.parameters())
opt_d = torch.optim.Adam(dec.parameters())
for x in torch.randn(10, 8, 4):
    loss = (dec(enc(x)) - x).pow(2).mean()
    loss.backward()
    opt_e.step()
    opt_d.step()
    opt_e.zero_grad()
    opt_d.zero_grad()
"""
    assert [d.code for d in check_source(joint)] == []


def test_a_pass_not_named_for_the_other_model_stays_joint() -> None:
    """Structure alone does not say which pass is whose (SAC's `pi_loss` reaches the critic, stepped first): the
    generator's loss must be named for the model whose optimizer applied it."""
    neutral = GAN.replace("g_loss", "second")
    assert [d.code for d in check_source(neutral)] == []
