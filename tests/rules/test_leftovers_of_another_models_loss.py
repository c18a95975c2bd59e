"""GL002 does not name a clear of what another model's loss left in these parameters after that loss's own
optimizer stepped on it, when this optimizer's step then applies a loss of its own (simple_CycleGAN: the
generators' loss runs through `netD_y`, `optimizer_g` steps, then `optimizer_d.zero_grad()` before
`netD_x`'s loss and `optimizer_d.step()`): those gradients are the generator's leftovers, and clearing them
is what GL005 asks for. A joint loss whose second optimizer is cleared before its step with nothing of its
own to apply (the seq2seq fixture's decoder) is still GL002."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

CYCLE = """
import torch
from torch import nn

netG_x, netG_y = nn.Linear(4, 4), nn.Linear(4, 4)
netD_x, netD_y = nn.Linear(4, 1), nn.Linear(4, 1)
optimizer_g = torch.optim.Adam(list(netG_x.parameters()) + list(netG_y.parameters()))
optimizer_d = torch.optim.Adam(list(netD_x.parameters()) + list(netD_y.parameters()))
for real_x, real_y in [(torch.randn(2, 4), torch.randn(2, 4))] * 8:
    optimizer_g.zero_grad()
    fake_x = netG_y(real_y)
    loss_Y = -netD_y(fake_x).mean() + (netG_x(fake_x) - real_y).abs().mean()
    loss_Y.backward()
    optimizer_g.step()
    optimizer_d.zero_grad()
    {own_loss}
    optimizer_d.step()
    optimizer_d.zero_grad()
    loss_D_y = netD_y(real_x).mean() - netD_y(fake_x.detach()).mean()
    loss_D_y.backward()
    optimizer_d.step()
"""


def _gl002(own_loss: str) -> list[int]:
    text = textwrap.dedent(CYCLE.format(own_loss=own_loss))
    return [d.span.line for d in check_source(text, "cycle.py", settings=Settings.default()) if d.code == "GL002"]


def test_leftovers_of_the_generators_loss_cleared_before_the_discriminators_own_loss() -> None:
    assert _gl002("(netD_x(real_y).mean() - netD_x(fake_x.detach()).mean()).backward()") == []


def test_a_step_left_with_nothing_of_its_own_still_loses_the_joint_gradients() -> None:
    assert _gl002("pass") == [15]
