"""Two-process DDP (gloo, CPU) under the guard: a correct no_sync accumulation loop and a buggy one."""

from __future__ import annotations

import contextlib
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from gradcheck_lint.runtime import guard

ACCUM = 2


def train(rank: int, world: int, port: int, out_dir: str) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    results = {}
    for variant in ("correct", "buggy"):
        model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with guard(model, opt, accumulation_steps=ACCUM, mode="record") as g:
            for i in range(8):
                boundary = (i + 1) % ACCUM == 0
                ctx = contextlib.nullcontext() if boundary else model.no_sync()
                with ctx:
                    (model(torch.randn(4, 4)).pow(2).mean() / ACCUM).backward()
                if boundary:
                    opt.step()
                    if variant == "correct":
                        opt.zero_grad(set_to_none=True)
        results[variant] = sorted({d.code for d in g.report()})
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(results, fh)
    # Both ranks leave together: a rank that tears its group down while the other still talks to it
    # makes gloo abort the other ("terminate called without an active exception").
    dist.barrier()
    dist.destroy_process_group()
    # gloo's threads still abort now and then in the C++ destructors at interpreter exit (seen on
    # torch 2.13, CPU, under load): the results are written, so leave without running them.
    os._exit(0)


if __name__ == "__main__":
    port, out_dir = int(sys.argv[1]), sys.argv[2]
    mp.spawn(train, args=(2, port, out_dir), nprocs=2, join=True)
