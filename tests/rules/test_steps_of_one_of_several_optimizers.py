"""GL001 on a step through a name that holds one of several optimizers, picked by a key the analysis cannot
evaluate (`optimizerB = optimizers[change(m)]`): which optimizer it is decides which earlier step already applied
the gradients, so the finding rests on that choice and is `possible` (pytorch-dual-learning, lockbox 21: each
of the two optimizers is cleared before the backward). A loop over the optimizers steps every one: still certain."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

PICKED_BY_KEY = """import torch
from torch import nn


def change(m):
    if m == "A":
        return "B"
    else:
        return "A"


models = {"A": nn.Linear(4, 4), "B": nn.Linear(4, 4)}
optimizers = {m: torch.optim.SGD(models[m].parameters(), lr=1e-3) for m in ["A", "B"]}
for t in range(100):
    for m in ["A", "B"]:
        modelA = models[m]
        modelB = models[change(m)]
        optimizerA = optimizers[m]
        optimizerB = optimizers[change(m)]
        x = torch.randn(2, 4)
        A_loss = modelA(x).mean()
        B_loss = modelB(x).mean()
        optimizerA.zero_grad()
        optimizerB.zero_grad()
        A_loss.backward()
        B_loss.backward()
        optimizerA.step()
        optimizerB.step()
"""

EVERY_ONE = """import torch
from torch import nn

models = [nn.Linear(4, 4), nn.Linear(4, 4)]
optimizers = [torch.optim.SGD(m.parameters(), lr=1e-3) for m in models]
for t in range(100):
    x = torch.randn(2, 4)
    loss = sum(m(x).mean() for m in models)
    loss.backward()
    for opt in optimizers:
        opt.step()
"""


def _gl001(source: str) -> list[tuple[int, str]]:
    found = check_source(textwrap.dedent(source), "dual.py", settings=Settings.default())
    return [(d.span.line, d.certainty.name) for d in found if d.code == "GL001"]


def test_a_step_of_one_of_several_optimizers_picked_by_key_is_possible() -> None:
    assert _gl001(PICKED_BY_KEY) == [(28, "POSSIBLE")]


def test_a_loop_stepping_every_optimizer_stays_certain() -> None:
    assert _gl001(EVERY_ONE) == [(11, "CERTAIN")]


HELPER_CALLED_TWICE = """
import torch
from torch import nn, optim

generator = nn.Linear(4, 8)


def invert(image, z_latent, steps=100):
    optimizer_z = optim.Adam([z_latent], lr=1e-2)
    for _ in range(steps):
        loss = (generator(z_latent) - image).abs().sum()
        loss.backward()
        optimizer_z.step()
    return z_latent


invert(torch.randn(1, 8), torch.randn(1, 4, requires_grad=True))
invert(torch.randn(1, 8), torch.randn(1, 4, requires_grad=True))
"""


def test_a_helpers_own_optimizer_made_in_each_call_stays_certain() -> None:
    # one call site steps another optimizer in each calling context, yet the name holds the one the call made
    assert _gl001(HELPER_CALLED_TWICE) == [(13, "CERTAIN")]
