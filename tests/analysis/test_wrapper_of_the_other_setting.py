"""A data-parallel wrapper built under one setting of the run is not the model on paths of the other setting.

Spectra's trainer (lockbox 28) builds a DeepSpeed engine or a DDP wrapper on the same flag, and its step helper
tests the flag again:

    def configure(args, model):              def step(args, loss, model, optimizer, bound):
        if args.ds_config:                       if args.ds_config:
            model, ... = deepspeed.initialize()      model.backward(loss)      # the engine
        else:                                        model.step()
            model = DDP(model)                   else:
        return model, optimizer                      loss.backward()           # through DDP
                                                     if bound: optimizer.step()

The forward runs through the joined value (engine or wrapper), but nothing assigns `args.ds_config` during the
run: the path that calls `model.backward(loss)` built the engine, and the engine reduces at its own boundary. Only
the DDP arm, which accumulates without `no_sync`, is GL006."""

from __future__ import annotations

from gradcheck_lint import check_source

SCRIPT = """\
import argparse
import torch
import deepspeed
from torch.nn.parallel import DistributedDataParallel as DDP


def step(args, loss, model, optimizer, bound):
    if {step_test}:
        model.backward(loss)
        model.step()
    else:
        loss = loss / args.grad_acc
        loss.backward()
        if bound:
            optimizer.step()
            optimizer.zero_grad()


def configure(args, model):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if args.ds_config:
        model, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=args.ds_config)
    else:
        model = DDP(model, device_ids=[args.local_rank])
    return model, optimizer


def main(loader):
    parser = argparse.ArgumentParser()
    parser.add_argument("--ds_config", default=None)
    parser.add_argument("--grad_acc", type=int, default=4)
    parser.add_argument("--local_rank", type=int, default=0)
    parser.add_argument("--use_engine", action="store_true")
    args = parser.parse_args()
    model, optimizer = configure(args, torch.nn.Linear(4, 1))
    for j, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        step(args, loss, model, optimizer, (j + 1) % args.grad_acc == 0)
"""


def gl006_lines(step_test: str) -> list[int]:
    found = check_source(SCRIPT.format(step_test=step_test), "train.py")  # every certainty
    return sorted(d.line for d in found if d.code == "GL006")


def test_only_the_ddp_arm_is_reported() -> None:
    assert gl006_lines("args.ds_config") == [13]


def test_a_test_of_another_setting_keeps_both_arms() -> None:
    # nothing ties the engine's arm to the engine: the DDP wrapper may be the model there too
    assert gl006_lines("args.use_engine") == [9, 13]


def test_the_arms_swap_with_the_test() -> None:
    # `if not args.ds_config:`: the first arm is the DDP world's, the `else:` the engine's
    assert gl006_lines("not args.ds_config") == [9]
