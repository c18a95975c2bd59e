"""A plain name whose gradient sync one function switches (`model.no_sync()` in `train_ddp`, where `model =
DDP(model)`) says nothing of another function's local of the same name: dpo-lora's single-process `train()` got a
certain GL006 because its `model`, returned by a helper of another file, was taken for a data-parallel wrapper. An
attribute (`self.model.no_sync()`) is one object for the whole class, as before."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = '''
from contextlib import nullcontext

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from models import get_model


def train(loader, accum_steps):
    model = get_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for i, batch in enumerate(loader):
        loss = model(batch)
        (loss / accum_steps).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_ddp(rank, loader, accum_steps):
    torch.distributed.init_process_group(backend="nccl")
    model = get_model()
    model = DDP(model, device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for i, batch in enumerate(loader):
        with model.no_sync() if (i + 1) % accum_steps != 0 else nullcontext():
            loss = model(batch)
            (loss / accum_steps).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
'''


def gl006(text: str) -> list[int]:
    return [d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL006"]


def test_a_local_of_another_function_is_no_wrapper() -> None:
    assert gl006(SOURCE) == []


def test_the_wrapper_without_no_sync_is_still_found() -> None:
    text = SOURCE.replace("        with model.no_sync() if (i + 1) % accum_steps != 0 else nullcontext():\n",
                          "        if True:\n")
    assert gl006(text) == [next(n for n, line in enumerate(text.splitlines(), 1)
                                if "(loss / accum_steps).backward()" in line and n > 20)]
