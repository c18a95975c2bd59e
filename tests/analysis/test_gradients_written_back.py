"""Gradients copied out and written back by hand (a manual accumulation, gradient surgery): each micro-batch's
gradients go to a buffer and are zeroed, and before the step a loop over the parameters writes them back where it
saved them (`if name in saved: p.grad = saved[name]`). The loop writes back the saved parameters' gradients on every
pass (`Interpreter._writes_back_some_gradients`): the zeroing discarded nothing the step needed."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

STASH = """\
import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
grad_dict = {}
N = 4
loader = [torch.randn(3, 4)] * 16

for i, x in enumerate(loader):
    loss = model(x).sum() / N
    loss.backward()
    for name, param in model.named_parameters():
        if name in grad_dict:
            grad_dict[name] += param.grad.detach().cpu()
        else:
            grad_dict[name] = param.grad.detach().cpu()
        param.grad.zero_()
    if (i + 1) % N == 0:
        for name, param in model.named_parameters():
RESTORE
        optimizer.step()
        optimizer.zero_grad()
        grad_dict.clear()
"""

WRITTEN_BACK = {
    "assigned": """\
            if name in grad_dict:
                param.grad = grad_dict[name].to(param.device)""",
    "under an inner test": """\
            if name in grad_dict.keys():
                if isinstance(grad_dict[name], list):
                    param.grad = torch.stack(grad_dict[name], dim=0).sum(dim=0)
                else:
                    param.grad = grad_dict[name].to(param.device)""",
    "copied": """\
            if name in grad_dict:
                param.grad.copy_(grad_dict[name])""",
}


@pytest.mark.parametrize("restore", sorted(WRITTEN_BACK))
def test_gradients_written_back_before_the_step_were_not_discarded(restore: str) -> None:
    assert [d.code for d in check_source(STASH.replace("RESTORE", WRITTEN_BACK[restore]))] == []


def test_gradients_zeroed_and_never_written_back_are_discarded() -> None:
    source = STASH.replace("        for name, param in model.named_parameters():\nRESTORE\n", "")
    assert [(d.code, d.line) for d in check_source(source)] == [("GL002", 17)]


def test_a_write_back_on_a_test_of_something_else_may_not_run() -> None:
    """`if i > 8:` does not choose among the parameters: before it holds, the step sees zeroed gradients."""
    source = STASH.replace("RESTORE", """\
            if i > 8:
                param.grad = grad_dict[name].to(param.device)""")
    assert [(d.code, d.line) for d in check_source(source)] == [("GL002", 17)]
