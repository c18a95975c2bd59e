"""A model wrapped for data parallelism on one arm of a test is no wrapper on a path that took the other
(`arm_facts`): the environment joins the arms, the paths' literals do not.

Lockbox 38's nayhein-project pretrain.py: `accelerator.prepare(model, ...)` only `if accelerator is not
None`, and the training function trains with `accelerator.backward(loss)` there and a plain
`loss.backward()` where the accelerator is None. The plain backward was reported as all-reducing through
DDP on every micro-batch (certain GL006), a path no run has."""

from __future__ import annotations

from gradcheck_lint import check_source

HEAD = """\
import argparse
import torch
from accelerate import Accelerator

parser = argparse.ArgumentParser()
parser.add_argument("--use_accelerate", action="store_true")
parser.add_argument("--accum", type=int, default=4)
args = parser.parse_args()

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = [torch.randn(8, 4) for _ in range(16)]
accelerator = None
if args.use_accelerate:
    accelerator = Accelerator()
if accelerator is not None:
    model, optimizer = accelerator.prepare(model, optimizer)
"""

BACKWARD = """\
        loss = model(x).pow(2).mean() / accum
        if accelerator is not None:
            accelerator.backward(loss)
        else:
            loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

IN_A_FUNCTION = HEAD + """

def train_epoch(model, loader, optimizer, accum, accelerator=None):
    for i, x in enumerate(loader):
""" + BACKWARD.replace("        ", "    ", 0) + """

for epoch in range(3):
    train_epoch(model, loader, optimizer, args.accum, accelerator=accelerator)
"""

IN_THE_SCRIPT = HEAD + """
accum = args.accum
for epoch in range(3):
    for i, x in enumerate(loader):
""" + BACKWARD

DDP = """\
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--distributed", action="store_true")
args = parser.parse_args()
accum = 4

model = torch.nn.Linear(4, 1)
if args.distributed:
    dist.init_process_group("nccl")
    model = DDP(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = [torch.randn(8, 4) for _ in range(16)]

for i, x in enumerate(loader):
    if args.distributed:
        with model.no_sync() if (i + 1) % accum != 0 else torch.enable_grad():
            loss = model(x).pow(2).mean() / accum
            loss.backward()
    else:
        loss = model(x).pow(2).mean() / accum
        {plain}
    if (i + 1) % accum == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def gl006(source: str) -> list[int]:
    return [d.line for d in check_source(source, "train.py") if d.code == "GL006"]


def line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if line.strip() == text)


def test_a_plain_backward_on_the_arm_that_prepared_nothing_in_a_function():
    # the accelerator's backward is a true GL006 (prepared, accumulated, no `accumulate()`); the plain one is not
    assert gl006(IN_A_FUNCTION) == [line_of(IN_A_FUNCTION, "accelerator.backward(loss)")]


def test_a_plain_backward_on_the_arm_that_prepared_nothing_in_the_script():
    # the path that took `accelerator = None` knows its test by the literal it bound (`assigned_constants`)
    assert gl006(IN_THE_SCRIPT) == [line_of(IN_THE_SCRIPT, "accelerator.backward(loss)")]


def test_the_subject_assigned_again_between_is_another_value():
    # `accelerator = None` after the preparation: the model is still prepared where the plain backward runs
    source = IN_THE_SCRIPT.replace("accum = args.accum\n", "accum = args.accum\naccelerator = None\n")
    assert line_of(source, "loss.backward()") in gl006(source)


def test_a_ddp_wrapper_built_on_one_arm():
    plain = DDP.replace("{plain}", "loss.backward()")
    assert gl006(plain) == []


def test_the_plain_arm_that_trains_the_wrapper_still_fires():
    # the `else` arm of a test that is not the wrapping's trains the wrapper too: every micro-batch all-reduces
    source = DDP.replace("    if args.distributed:\n        with", "    if args.distributed and args.no_sync:\n        with").replace(
        "{plain}", "loss.backward()  # plain")
    assert line_of(source, "loss.backward()  # plain") in gl006(source)
