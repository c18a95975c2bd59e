"""How models wrapped for data parallelism are read (GL006), from the code that met them first:
a parameter list grown with `+=` (NVIDIA's BERT distillation), a list of parts that grows with
`append` before `accelerator.prepare(*parts)` (pytorch-accelerated), and a sync context chosen into a
variable before it is entered (magvit2, FunASR)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics)


DISTILL = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

student = DDP(torch.nn.Linear(4, 4))
project = DDP(torch.nn.Linear(4, 4))
params = list(student.named_parameters())
if train_project:
    params {grow} list(project.named_parameters())
optimizer = torch.optim.AdamW([p for n, p in params])
for step, x in enumerate(loader):
    loss = project(student(x)).sum() / 4
    loss.backward()
    if (step + 1) % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_parameter_list_grown_with_plus_equals_is_owned_by_the_optimizer() -> None:
    # both wrappers' parameters are the optimizer's: the backward all-reduces for its window
    assert found(DISTILL.format(grow="+=")) == [(12, "GL006")]


PARTS = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
parts = [model, optimizer]
if loader is not None:
    parts.append(loader)
prepared = accelerator.prepare(*parts)
model, optimizer = prepared[0], prepared[1]
for step, x in enumerate(loader):
    accelerator.backward(model(x).sum() / 4)
    if (step + 1) % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def test_appending_to_a_list_of_modules_is_no_forward_pass_and_keeps_its_parts() -> None:
    assert found(PARTS) == [(13, "GL006")]


CHOSEN = """\
from contextlib import nullcontext
from functools import partial
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = accelerator.prepare(model, optimizer)
for batch in loader:
    for k in range(4):
        {choose}
        with context():
            accelerator.backward(model(batch[k]).sum() / 4)
    optimizer.step()
    optimizer.zero_grad()
"""


def test_a_sync_context_chosen_with_partial_is_entered_where_it_is_called() -> None:
    assert found(CHOSEN.format(choose="context = partial(accelerator.no_sync, model) if k < 3 else nullcontext")) == []


def test_a_partial_of_anything_else_switches_nothing() -> None:
    assert found(CHOSEN.format(choose="context = partial(print, model) if k < 3 else nullcontext")) == [(14, "GL006")]


DDP_CHOSEN = """\
from contextlib import nullcontext
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step, x in enumerate(loader):
    context = nullcontext
    if {test}:
        context = model.no_sync
    with context():
        (model(x).sum() / 4).backward()
    if (step + 1) % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_bound_no_sync_chosen_on_some_paths_only_is_off_on_some_micro_batches() -> None:
    assert found(DDP_CHOSEN.format(test="(step + 1) % 4 != 0")) == []


def test_without_the_choice_the_wrapper_syncs_on_every_micro_batch() -> None:
    assert found(DDP_CHOSEN.replace("        context = model.no_sync\n", "        context = nullcontext\n").format(test="(step + 1) % 4 != 0")) == [(12, "GL006")]
