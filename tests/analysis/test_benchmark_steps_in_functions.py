"""A loop that only calls a function of the module that steps (and never backpropagates) re-applies one gradient on
purpose: PyTorch's compiled-optimizer tutorial populates the gradients with one backward pass, then calls a compiled
`fn()` that steps the optimizer and its scheduler five times (lockbox 24: certain GL001s). A function that
backpropagates, called so, still trains."""

from __future__ import annotations

import textwrap

from gradcheck_lint.api import check_source

TUTORIAL = """
import torch

model = torch.nn.Sequential(*[torch.nn.Linear(64, 64, False) for _ in range(4)])
output = model(torch.rand(64))
output.sum().backward()

opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)


@torch.compile(fullgraph=False)
def fn():
{body}


for _ in range(5):
    fn()
    print(opt.param_groups[0]["lr"])

opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)


@torch.compile(fullgraph=False)
def fn():
    opt.step()
    sched.step()


for _ in range(5):
    fn()
"""


def found(body: str) -> list[tuple[str, int]]:
    src = textwrap.dedent(TUTORIAL).replace("{body}", textwrap.indent(textwrap.dedent(body).strip(), "    "))
    return [(d.code, d.line) for d in check_source(src)]


def test_steps_repeated_by_a_called_function_that_never_backpropagates_are_no_training() -> None:
    assert found("opt.step()\nsched.step()") == []


def test_a_called_function_that_backpropagates_still_trains() -> None:
    # (the second loop's `fn()` may be either definition of the name: it is not taken for a benchmark either)
    assert ("GL001", 15) in found("model(torch.rand(64)).sum().backward()\nopt.step()\nsched.step()")
