"""A notebook's code cells run in its kernel's one process, unless it launches others (accelerate's
`notebook_launcher`, `torch.multiprocessing.spawn`, Fabric's `launch`): `accelerator.prepare(model)` wraps
nothing in DDP there, so an accumulation window without `no_sync` all-reduces nothing. GL006 assumed a
multi-process launch in a course notebook (lockbox 15's HW6 diffusion notebook, development material now).
The same code as a script (launched with `accelerate launch`), or a notebook that launches processes, is
still reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradcheck_lint.api import check_file

_SETUP = """\
import torch
from accelerate import Accelerator
{imports}

class Trainer:
    def __init__(self, model, data, steps, accumulate_every=4):
        self.accelerator = Accelerator(mixed_precision="no")
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        self.model, self.opt = self.accelerator.prepare(model, self.opt)
        self.data = data
        self.steps = steps
        self.accumulate_every = accumulate_every
"""

_TRAIN = """\
    def train(self):
        for step in range(self.steps):
            for _ in range(self.accumulate_every):
                x = next(self.data)
                loss = self.model(x).mean() / self.accumulate_every
                self.accelerator.backward(loss)
            self.opt.step()
            self.opt.zero_grad()
"""

_RUN = """\
def main():
    trainer = Trainer(torch.nn.Linear(4, 4), iter([]), 10)
    trainer.train()

{launch}
"""

LAUNCHES = {
    "none": ("", "main()"),
    "notebook_launcher": ("from accelerate import notebook_launcher", "notebook_launcher(main, (), num_processes=2)"),
    "spawn": ("import torch.multiprocessing as mp", "mp.spawn(main, nprocs=2)"),
}


def _cells(launch: str) -> list[str]:
    imports, call = LAUNCHES[launch]
    return [_SETUP.replace("{imports}", imports) + _TRAIN, _RUN.replace("{launch}", call)]


def _notebook(path: Path, cells: list[str]) -> Path:
    path.write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": c.splitlines(keepends=True)} for c in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


@pytest.mark.parametrize("launch", sorted(LAUNCHES))
def test_gl006_in_a_notebook_needs_a_launch_of_several_processes(tmp_path: Path, launch: str) -> None:
    path = _notebook(tmp_path / "train.ipynb", _cells(launch))
    found = [d.code for d in check_file(str(path), codes=["GL006"])]
    assert found == ([] if launch == "none" else ["GL006"])


def test_the_same_code_as_a_script_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text("\n".join(_cells("none")))
    assert [d.code for d in check_file(str(path), codes=["GL006"])] == ["GL006"]


_DDP = """\
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
{imports}

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--accum", type=int, default=4)
args, _ = parser.parse_known_args()


def main(rank=0):
    model = torch.nn.Linear(4, 4)
    if args.local_rank != -1:
        dist.init_process_group("nccl")
        model = DDP(model, device_ids=[args.local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, x in enumerate(torch.randn(16, 4).split(2)):
        loss = model(x).mean() / args.accum
        loss.backward()
        if (step + 1) % args.accum == 0:
            opt.step()
            opt.zero_grad()
"""


@pytest.mark.parametrize("launch", ["none", "spawn"])
def test_a_ddp_wrapper_in_a_notebook_needs_a_launch_of_several_processes(tmp_path: Path, launch: str) -> None:
    """A plain DDP wrapper (orconvqa's retriever notebook, lockbox 35: built under `if args.local_rank != -1:`, which
    the kernel's arguments leave off) has no other process to all-reduce with in the kernel's one process."""
    imports, call = LAUNCHES[launch]
    cells = [_DDP.replace("{imports}", imports), call]
    path = _notebook(tmp_path / "train.ipynb", cells)
    found = [d.code for d in check_file(str(path), codes=["GL006"])]
    assert found == ([] if launch == "none" else ["GL006"])
    script = tmp_path / "train.py"
    script.write_text("\n".join(cells))
    assert [d.code for d in check_file(str(script), codes=["GL006"])] == ["GL006"]
