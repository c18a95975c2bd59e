"""A test of None on a value known to be an object on every path goes one way (`Value.present`, read by
`fixed_tests.FixedTests.none_test`): `if loss is not None:` on `loss = 0; loss += ...` no longer opens a path
that cannot happen (edge-connect's `models.py`: a certain GL002 on the discriminator's `zero_grad()`, false).
A value that may be None keeps both paths."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

# the zero_grad runs only under the test: on the path that skips it, the loop never clears (GL001)
GUARDED = """\
import torch
import torch.nn.functional as F
from helpers import compute_loss
model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def maybe(x):
    if x.sum() > 0:
        return model(x).mean()

def always(x):
    out = model(x)
    return out.mean()

for x in torch.randn(8, 2, 4):
{make}
    if {test}:
        opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()
"""

KNOWN = [
    "    loss = 0\n    loss += model(x).mean()",
    "    loss = model(x).mean()",
    "    loss = model(x)",
    "    loss = 2.0 * model(x).mean()",
    "    loss = -model(x).mean()",
    "    loss = F.mse_loss(model(x), x)",
    "    loss = torch.zeros(1)",
    "    loss = [model(x)]",
    "    loss = {'g': model(x)}",
    "    loss = 'mse'",
    "    loss = always(x)",
    "    loss = 1\n    if x.sum() > 0:\n        loss = model(x).mean()",
]

MAYBE = [
    "    loss = None\n    if x.sum() > 0:\n        loss = model(x).mean()",
    "    loss = None",
    "    loss = compute_loss(model, x)",  # a helper of another file: it may return None
    "    loss = maybe(x)",  # falls off its end on some paths
    "    loss = model(x).mean() if x.sum() > 0 else None",
    "    loss = {'g': model(x)}.get('d')",  # a key the dict does not hold
    "    loss = evaluate(model)",  # read by its name alone: a helper that may return None
]

RUNS = ["loss is not None", "loss != None", "not loss is None", "not (loss is None)"]


def codes(make: str, test: str) -> list[str]:
    return [d.code for d in analyse_text(GUARDED.format(make=make, test=test), "train.py").diagnostics]


@pytest.mark.parametrize("make", KNOWN)
@pytest.mark.parametrize("test", RUNS)
def test_a_value_known_not_none_runs_the_guarded_clear(make: str, test: str) -> None:
    assert codes(make, test) == []


@pytest.mark.parametrize("make", KNOWN[:3])
@pytest.mark.parametrize("test", ["loss is None", "loss == None"])
def test_a_value_known_not_none_never_takes_the_none_arm(make: str, test: str) -> None:
    assert codes(make, test) == ["GL001"]  # the clear never runs: a real GL001 on every path


@pytest.mark.parametrize("make", MAYBE)
@pytest.mark.parametrize("test", ["loss is not None", "loss != None"])
def test_a_value_that_may_be_none_keeps_both_paths(make: str, test: str) -> None:
    assert "GL001" in codes(make, test)


def test_a_name_bound_on_one_path_only_is_not_known_after_the_join() -> None:
    make = "    if x.sum() > 0:\n        loss = model(x).mean()"
    assert "GL001" in codes(make, "loss is not None")


# edge-connect's models.py: the losses are built from 0 by `+=`, returned, and handed to `backward(gen_loss=None,
# dis_loss=None)`, whose `if dis_loss is not None:` cannot be false on this call
EDGE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = nn.Linear(4, 4)
        self.discriminator = nn.Linear(4, 1)
        self.gen_optimizer = torch.optim.Adam(self.generator.parameters())
        self.dis_optimizer = torch.optim.Adam(self.discriminator.parameters())

    def process(self, images):
        self.gen_optimizer.zero_grad()
        self.dis_optimizer.zero_grad()
        outputs = self.generator(images)
{losses}
        return outputs, gen_loss, dis_loss

    def backward(self, gen_loss=None, dis_loss=None):
        if dis_loss is not None:
            dis_loss.backward()
        self.dis_optimizer.step()
        if gen_loss is not None:
            gen_loss.backward()
        self.gen_optimizer.step()


model = Model()
for images in [torch.randn(2, 4)] * 8:
    outputs, gen_loss, dis_loss = model.process(images)
    model.backward(gen_loss, dis_loss)
"""

SUMMED = """\
        gen_loss = 0
        dis_loss = 0
        dis_loss += (self.discriminator(images).mean() - self.discriminator(outputs.detach()).mean()) / 2
        gen_loss += -self.discriminator(outputs).mean()"""

# the discriminator's loss only on some batches: the step without it is a path that can happen
SOMETIMES = """\
        gen_loss = 0
        dis_loss = None
        if images.sum() > 0:
            dis_loss = (self.discriminator(images).mean() - self.discriminator(outputs.detach()).mean()) / 2
        gen_loss += -self.discriminator(outputs).mean()"""


def test_edge_connect_reports_only_the_true_gl009() -> None:
    found = analyse_text(EDGE.format(losses=SUMMED), "models.py").diagnostics
    assert [(d.code, d.line) for d in found] == [("GL009", 28)]


def test_edge_connect_with_a_loss_that_may_be_none_keeps_the_step_without_it() -> None:
    found = analyse_text(EDGE.format(losses=SOMETIMES), "models.py").diagnostics
    assert {d.code for d in found} == {"GL002", "GL009"}
