"""Two-process DDP (gloo, CPU) under the guard: a correct no_sync accumulation loop, one that never
clears (GL001), and one that accumulates without `no_sync` (GL006). A counting communication hook
records the gradient all-reduces of every micro-batch, so the test can check GL006 against the
reductions DDP really made on micro-batches that do not step."""

from __future__ import annotations

import contextlib
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from gradcheck_lint.runtime import guard

ACCUM = 2


def train(rank: int, world: int, port: int, out_dir: str) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    results: dict[str, object] = {}
    for variant in ("correct", "buggy", "no_sync_missing"):
        model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        reductions = [0]

        def counting_hook(state, bucket):  # type: ignore[no-untyped-def]  (DDP rejects string annotations)
            reductions[0] += 1  # noqa: B023 - called within this iteration
            return default_hooks.allreduce_hook(None, bucket)  # type: ignore[arg-type]

        model.register_comm_hook(None, counting_hook)
        off_boundary = 0  # all-reduces made by micro-batches that do not step
        with guard(model, opt, accumulation_steps=ACCUM, mode="record") as g:
            for i in range(8):
                boundary = (i + 1) % ACCUM == 0
                ctx = contextlib.nullcontext() if boundary or variant == "no_sync_missing" else model.no_sync()
                before = reductions[0]
                with ctx:
                    (model(torch.randn(4, 4)).pow(2).mean() / ACCUM).backward()
                if not boundary:
                    off_boundary += reductions[0] - before
                if boundary:
                    opt.step()
                    if variant != "buggy":
                        opt.zero_grad(set_to_none=True)
        results[variant] = sorted({d.code for d in g.report()})
        results[f"{variant}_off_boundary_reductions"] = off_boundary
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(results, fh)
    # Both ranks leave together: a rank that tears its group down while the other still talks to it
    # makes gloo abort the other ("terminate called without an active exception").
    dist.barrier()
    dist.destroy_process_group()
    # gloo's threads still abort now and then in the C++ destructors at interpreter exit (seen on
    # torch 2.13, CPU, under load): the results are written, so leave without running them.
    os._exit(0)


if __name__ == "__main__":  # python tests/ddp_worker.py OUT_DIR
    import socket

    with socket.socket() as s:  # a free port, picked by each run (a run made again after a hang gets a new one)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(train, args=(2, port, sys.argv[1]), nprocs=2, join=True)
