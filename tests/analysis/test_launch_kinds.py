"""A backward guarded by a test of the launch's kind (`accelerator.distributed_type`): Accelerate's `prepare` wraps
models in DDP only on some kinds of launch (the catalogue's `launch_kind`), so the arm a test leaves decides whether the
prepared model can sync there. codeparrot's training script (lockbox 34, a certain GL006 of kind 1) runs its `no_sync`
backward under `== DistributedType.MULTI_GPU` and a plain one in the `else`: DDP there only on a launch of another
kind (MULTI_CPU, NPU...), an assumption."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint.analysis.apimodels import catalogue_for
from gradcheck_lint.analysis.launch_kinds import ONE_PROCESS, UNUSUAL, arm_launch
from gradcheck_lint.api import check_source

PLAIN = """\
import torch
from accelerate import Accelerator, DistributedType

accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = accelerator.prepare(model, optimizer)
accum = 4
for step, x in enumerate(torch.randn(16, 4).split(2), start=1):
    loss = model(x).pow(2).mean() / accum
    if step % accum != 0:
        if TEST:
            with model.no_sync():
                accelerator.backward(loss)
        else:
            accelerator.backward(loss)
    else:
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""


def _gl006(text: str) -> list[tuple[int, str]]:
    return [(d.line, d.certainty.value) for d in check_source(text, "train.py", codes=["GL006"])]


def test_the_else_of_the_usual_multi_process_kind_is_an_assumption() -> None:
    """codeparrot's shape: the plain backward in the `else` of `== DistributedType.MULTI_GPU`."""
    text = PLAIN.replace("TEST", "accelerator.distributed_type == DistributedType.MULTI_GPU")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == "else:") + 1
    assert (line, "possible") in _gl006(text)
    assert (line, "certain") not in _gl006(text)


def test_without_the_test_the_same_backward_is_certain() -> None:
    """The control: the same loop with a test of something else around the plain backward."""
    text = PLAIN.replace("TEST", "step > 100")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == "else:") + 1
    assert (line, "certain") in _gl006(text)


def test_a_backward_where_no_kind_of_launch_wraps_is_not_reported() -> None:
    text = PLAIN.replace("TEST", "accelerator.distributed_type != DistributedType.NO")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == "else:") + 1
    assert all(found != line for found, _ in _gl006(text))


KINDS = catalogue_for().launch_attributes()


def _arm(source: str) -> str | None:
    """The launch `arm_launch` reads for the call `backward()` in `source`."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "backward")
    return arm_launch(call, parents.get, KINDS)


@pytest.mark.parametrize(("source", "expected"), [
    ("if accelerator.distributed_type == DistributedType.MULTI_GPU:\n    pass\nelse:\n    backward()", UNUSUAL),
    ("if accelerator.distributed_type == DistributedType.MULTI_GPU:\n    backward()", None),
    ("if accelerator.distributed_type != DistributedType.MULTI_GPU:\n    backward()", UNUSUAL),
    ("if accelerator.state.distributed_type == 'NO':\n    backward()", ONE_PROCESS),
    ("if accelerator.distributed_type == DistributedType.NO:\n    pass\nelse:\n    backward()", None),
    ("if not accelerator.distributed_type in (DistributedType.MULTI_GPU, DistributedType.FSDP):\n    backward()",
     UNUSUAL),
    ("if accelerator.distributed_type in (DistributedType.MULTI_GPU, DistributedType.FSDP):\n    backward()", None),
    ("if ok and accelerator.distributed_type == DistributedType.NO:\n    backward()", ONE_PROCESS),
    ("if ok or accelerator.distributed_type == DistributedType.NO:\n    backward()", None),
    ("def f():\n    backward()\nif accelerator.distributed_type == DistributedType.NO:\n    f()", None),
    ("x = backward() if accelerator.distributed_type == DistributedType.NO else 0", ONE_PROCESS),
    ("if accelerator.mixed_precision == 'fp16':\n    backward()", None),
])
def test_the_arm_a_test_of_the_launch_kind_leaves(source: str, expected: str | None) -> None:
    assert _arm(source) == expected


def test_the_catalogue_knows_accelerates_launch_kinds() -> None:
    several, usual = KINDS["distributed_type"]
    assert usual == "MULTI_GPU" and {"MULTI_GPU", "MULTI_CPU", "FSDP"} <= several and "NO" not in several
