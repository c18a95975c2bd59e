"""Bug: DDP accumulation with the sync choice inverted and made into a name before the `with` that enters
it (`ctx = ddp_model.no_sync if last else contextlib.nullcontext`, then `with ctx():`): the micro-batch
that steps runs with sync off, so the replicas diverge (GL006, at the choice, on both sides)."""
import contextlib
import tempfile

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    with tempfile.NamedTemporaryFile() as rendezvous:
        dist.init_process_group("gloo", init_method=f"file://{rendezvous.name}", rank=0, world_size=1)
        torch.manual_seed(0)
        ddp_model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
        optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.05)
        accum = 4
        for it, (x, y) in enumerate(zip(torch.randn(8, 6, 16), torch.randn(8, 6, 1))):
            last = (it + 1) % accum == 0
            ctx = ddp_model.no_sync if last else contextlib.nullcontext  # expect: GL006
            with ctx():
                loss = nn.functional.mse_loss(ddp_model(x), y) / accum
                loss.backward()
            if last:
                optimizer.step()
                optimizer.zero_grad()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
