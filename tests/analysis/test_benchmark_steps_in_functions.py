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


# The `foreach_map` tutorial: the step is written in the loop, beside a compiled function held in a variable that
# updates weights by hand; nothing in the loop or in the wrapped function backpropagates.
WRAPPED = """
import torch

model = torch.nn.Sequential(*[torch.nn.Linear(64, 64, False) for _ in range(4)])
model(torch.rand(64)).sum().backward()


def {name}(params, grads, lr):
{body}


opt_eager = torch.optim.Adam(model.parameters(), lr=0.01)
opt_eager.step()
inputs = ([p for p in model.parameters()], [p.grad for p in model.parameters()], 0.01)
compiled = {wrapper}({name})

for _ in range(5):
    opt_eager.step()
    compiled(*inputs)
"""
BY_HAND = """
updated = torch._foreach_add(params, grads, alpha=-lr)
torch._foreach_copy_(params, updated)
"""
TRAINS = """
model(torch.rand(64)).sum().backward()
"""


def _wrapped(body: str, wrapper: str = "torch.compile", name: str = "adam_by_hand") -> list[tuple[str, int]]:
    """The findings, with the loop's `opt_eager.step()` at line 0."""
    src = WRAPPED.format(name=name, wrapper=wrapper, body=textwrap.indent(body.strip(), "    "))
    step = 1 + src.splitlines().index("    opt_eager.step()")
    return [(d.code, d.line - step) for d in check_source(src)]


def test_a_wrapped_function_held_in_a_variable_is_read_as_its_body() -> None:
    assert _wrapped(BY_HAND) == []
    assert _wrapped(BY_HAND, wrapper="torch.jit.script") == []


def test_a_wrapped_function_that_backpropagates_still_trains() -> None:
    assert ("GL001", 0) in _wrapped(TRAINS)


def test_a_call_of_an_unknown_function_may_backpropagate() -> None:
    # (the same loop calling something of another library, held in a variable, is left as training)
    assert ("GL001", 0) in _wrapped(BY_HAND, wrapper="somelib.wrap")
