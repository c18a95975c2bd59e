"""A gradient hook runs inside the backward passes of the paths that registered it, not of every path.

GaLore's torchrun_main.py registers `p.register_post_accumulate_grad_hook(optimizer_hook)` (a step and a
clear per parameter, inside backward) only for its layer-wise optimizers; its other optimizers accumulate
`args.gradient_accumulation` micro-batches of a DDP model with no `no_sync` (a true GL006). Once such hooks
ran inside backward (a76ae54), they ran on every path: the clear in the hook emptied every window, and the
GL006 was lost. A hook now marks the paths that registered it and runs on those.
"""

from __future__ import annotations

from gradcheck_lint import check_source

SCRIPT = """\
import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, accum, layer_wise):
    model = DDP(net)
    if layer_wise:
        optimizers = {{p: torch.optim.SGD([p], lr=0.1) for p in model.parameters()}}

        def step_in_backward(p):
            optimizers[p].step()
            optimizers[p].zero_grad()

        for p in model.parameters():
            p.register_post_accumulate_grad_hook(step_in_backward)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for idx, (x, y) in enumerate(loader):
        with {sync}:
            loss = (model(x) - y).pow(2).mean() / accum
            loss.backward()
        if not layer_wise and (idx + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

NO_SYNC = "model.no_sync() if (idx + 1) % accum else contextlib.nullcontext()"
BACKWARD = SCRIPT.splitlines().index("            loss.backward()") + 1


def codes(sync: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(SCRIPT.format(sync=sync))]


def test_the_paths_that_never_registered_the_hook_accumulate() -> None:
    assert (BACKWARD, "GL006") in codes("contextlib.nullcontext()")


def test_silent_when_their_micro_batches_skip_the_sync() -> None:
    assert [c for _, c in codes(NO_SYNC) if c == "GL006"] == []
