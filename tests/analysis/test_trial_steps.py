"""Steps that do not train (`analysis/trials.py`): a trial step undone by restoring the weights from a
snapshot taken before it, and steps repeated with nothing in their loop able to backpropagate (an
optimizer benchmark). Neither is reported as applying stale gradients, nor makes the real step after it
look stale; the same code with the snapshot taken after the step, or a backward in the loop, is."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.trials import steps_without_backward, undone_steps

LOOKAHEAD = """\
import copy
import torch
from torch import nn


def train(model, loader, val_x, val_y):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
{before}
        optimizer.step()
{between}
        with torch.no_grad():
            ahead = nn.functional.mse_loss(model(val_x), val_y)
{restore}
        if ahead.item() < 1.0:
            optimizer.step()
"""
SNAPSHOT = "        saved = copy.deepcopy(model.state_dict())"
LOAD = "        model.load_state_dict(saved)"
COPY_BACK = "        with torch.no_grad():\n            for p, s in zip(model.parameters(), saved):\n                p.data.copy_(s)"
TENSORS = "        saved = [p.detach().clone() for p in model.parameters()]"


@pytest.mark.parametrize(
    ("before", "between", "restore", "codes"),
    [
        (SNAPSHOT, "", LOAD, []),
        (TENSORS, "", COPY_BACK, []),
        ("", SNAPSHOT, LOAD, ["GL001"]),  # the snapshot holds the trial update: restoring it keeps the step
        (SNAPSHOT, "        nn.functional.mse_loss(model(x), y).backward()", LOAD, ["GL001"]),  # a backward before the restore
        (SNAPSHOT, "", "        pass", ["GL001"]),  # nothing restored
    ],
)
def test_a_step_undone_by_restoring_the_weights_trains_nothing(before: str, between: str, restore: str, codes: list[str]) -> None:
    src = LOOKAHEAD.format(before=before, between=between, restore=restore)
    assert [d.code for d in check_source(src)] == codes


BENCH = """\
import time
import torch
from torch import nn


def fit_batch(model):
    model(torch.randn(32, 64)).pow(2).mean().backward()


def benchmark(model, opt_class, steps=1000):
    optimizer = opt_class(model.parameters(), lr=1e-3)
    model(torch.randn(32, 64)).pow(2).mean().backward()
    start = time.perf_counter()
    for _ in range(steps):
{body}
    return (time.perf_counter() - start) / steps
"""


@pytest.mark.parametrize(
    ("body", "codes"),
    [
        ("        optimizer.step()", []),
        ("        optimizer.step()\n        torch.cuda.synchronize()", []),
        ("        model(torch.randn(32, 64)).pow(2).mean().backward()\n        optimizer.step()", ["GL001"]),
        ("        fit_batch(model)\n        optimizer.step()", ["GL001"]),  # a function of the file that backpropagates
    ],
)
def test_steps_repeated_with_nothing_that_backpropagates_are_a_benchmark(body: str, codes: list[str]) -> None:
    assert [d.code for d in check_source(BENCH.format(body=body))] == codes


def test_a_loop_over_optimizers_is_not_a_benchmark() -> None:
    src = """\
import torch
from torch import nn


def train(model, loader, optimizers):
    for x, y in loader:
        nn.functional.mse_loss(model(x), y).backward()
        for opt in optimizers:
            opt.step()
"""
    tree = ast.parse(src)
    inner = [n for n in ast.walk(tree) if isinstance(n, ast.For)][1]
    assert steps_without_backward(inner, {"torch": "torch"}, {"train"})  # it steps with no backward in it...
    # ...but which optimizer steps changes with each iteration: each one's missing clear is still reported
    assert [d.code for d in check_source(src)] == ["GL001"]


def test_undone_steps_needs_a_snapshot_taken_before_the_step() -> None:
    src = "saved = m.state_dict()\nopt.step()\nm.load_state_dict(saved)\nopt.step()\n"
    tree = ast.parse(src)
    steps = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "step"]
    assert undone_steps(tree) == frozenset({id(steps[0])})


WARMUP = """\
import copy
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
optimizers = [torch.optim.Adam(model[0].parameters()), torch.optim.SGD(model[1].parameters(), lr=0.1)]
initial_state = dict(model=copy.deepcopy(model.state_dict()))  # warm the kernels up, then start afresh
for step in range(10):
    model(torch.randn(8, 4)).sum().backward()
    if step % 2 == 0:
        optimizers[1].step()
        optimizers[1].zero_grad(set_to_none=True)
    else:
        for opt in optimizers:
            opt.step()
        model.zero_grad(set_to_none=True)
model.load_state_dict(initial_state["model"])
"""


def test_a_clear_after_a_trial_step_discards_nothing() -> None:
    # modded-nanogpt's kernel warm-up: every step of the loop is undone by the restore after it; the
    # clear right after a step applied its gradients, though by a step that trains nothing
    assert [d.code for d in check_source(WARMUP)] == []


def test_a_step_handed_a_closure_trains_though_the_loop_never_calls_backward() -> None:
    """LBFGS: `opt.step(closure)` runs the closure's backward; the loop is training, not a benchmark."""
    src = """\
import torch
model = torch.nn.Linear(4, 1)
lbfgs = torch.optim.LBFGS(model.parameters(), max_iter=1)
x, y = torch.randn(16, 4), torch.randn(16, 1)

def closure():
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss

for step in range(8):
    loss = lbfgs.step(closure)
    print(step, float(loss))
"""
    assert [(d.code, d.line) for d in check_source(src, "lbfgs.py")] == [("GL001", 12)]
