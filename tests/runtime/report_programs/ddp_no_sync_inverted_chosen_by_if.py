"""Bug: DDP accumulation with `no_sync()` chosen the wrong way round by an `if` statement: the micro-batch
that steps runs under `with ddp_model.no_sync():` (its gradients stay on each rank: the replicas
diverge) and the others all-reduce for nothing. The static side reads no choice in a statement and
anchors GL006 at the backward of the micro-batches that all-reduce; the guard anchors there too."""
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
            if last:
                with ddp_model.no_sync():
                    loss = nn.functional.mse_loss(ddp_model(x), y) / accum
                    loss.backward()
            else:
                loss = nn.functional.mse_loss(ddp_model(x), y) / accum
                loss.backward()  # expect: GL006
            if last:
                optimizer.step()
                optimizer.zero_grad()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
