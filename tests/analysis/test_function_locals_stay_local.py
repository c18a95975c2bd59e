"""A function called from module level binds its own locals: a name it assigns (without `global`) is not the
caller's variable of that name. machine-learning-book's ch17 GAN: `g_train` assigns a local `d_proba_fake`
(with a graph) while the loop's `d_proba_fake` is the detached one `d_train` returned; the local leaked into
the loop's variable and a certain GL008 was reported on `d_vals_fake.append(d_proba_fake.mean().cpu())`
(a lockbox-5 false alarm: a fact assumed)."""

from __future__ import annotations

from gradcheck_lint import check_source

HEAD = """\
import torch
gen = torch.nn.Linear(4, 4)
disc = torch.nn.Linear(4, 1)
opt_d = torch.optim.Adam(disc.parameters())
opt_g = torch.optim.Adam(gen.parameters())


def d_train(x):
    disc.zero_grad()
    d_fake = disc(gen(x))
    loss = d_fake.mean()
    loss.backward()
    opt_d.step()
    return loss.item(), d_fake.detach()


"""

LOOP = """\
kept = []
total = 0
for x in loader:
    d_loss, d_fake = d_train(x)
    g_train(x)
    kept.append(d_fake.mean().cpu())
"""


def codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(src)]


def test_a_callees_local_of_the_same_name_leaves_the_callers_variable_alone() -> None:
    g_train = """\
def g_train(x):
    gen.zero_grad()
    d_fake = disc(gen(x))
    (-d_fake.mean()).backward()
    opt_g.step()


"""
    assert codes(HEAD + g_train + LOOP) == []


def test_a_global_the_callee_declares_is_rebound() -> None:
    g_train = """\
def g_train(x):
    global d_fake
    gen.zero_grad()
    d_fake = disc(gen(x))
    (-d_fake.mean()).backward()
    opt_g.step()


"""
    assert [c for _, c in codes(HEAD + g_train + LOOP)] == ["GL008"]

