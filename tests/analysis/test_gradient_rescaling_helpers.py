"""A method out of sight whose name says it rescales or averages gradients in place
(`compensate_modulation_gradients()`, `average_gradients(model)`, `sync_grads()`) clears none: read as a possible clear
of every optimizer (its name holds "grad"), it hid the micro-batches a DDP window accumulates without `no_sync`
(NeuronSpark's language model, lockbox 33: a missed GL006). A helper whose name says it clears still clears."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

DDP_WINDOW = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from model import SNNLanguageModel

dist.init_process_group("nccl")
model = DDP(SNNLanguageModel())
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
accumulation_steps = 4
for step, (x, y) in enumerate(loader):
    loss = torch.nn.functional.cross_entropy(model(x), y) / accumulation_steps
    loss.backward()
    if (step + 1) % accumulation_steps == 0:
        model.module.{call}()
        optimizer.step()
        optimizer.zero_grad()
"""


def gl006(call: str) -> list[int]:
    return [d.line for d in check_source(DDP_WINDOW.format(call=call)) if d.code == "GL006"]


@pytest.mark.parametrize("call", ["compensate_modulation_gradients", "average_gradients", "sync_grads", "rescale_grads"])
def test_a_helper_that_rescales_gradients_clears_none(call: str) -> None:
    assert gl006(call) == [13]


@pytest.mark.parametrize("call", ["zero_grads", "clear_gradients", "reset_grad_accumulation"])
def test_a_helper_whose_name_says_it_clears_still_clears(call: str) -> None:
    assert gl006(call) == []
