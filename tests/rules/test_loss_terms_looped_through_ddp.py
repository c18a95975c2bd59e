"""GL006 speaks of micro-batches: forward passes of a window that do not step. A loop that backpropagates the
losses one forward returned (PyTorch-MFNet's `outputs, losses = self.forward(data, target)` then
`for loss in losses: loss.backward()`, with `return [output], [loss]`) runs no forward of its own: its passes are
terms of one batch's objective, which GL003 already leaves undivided. It is no window that could skip a sync.
A real micro-batch loop through the same wrapper (a forward in each pass) is still reported."""

from support import lines_of

TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Base:
    def forward(self, data, target):
        output = self.net(data)
        loss = self.criterion(output, target)
        return [output], [loss]

    def fit(self, loader, optimizer):
        for data, target in loader:
            optimizer.zero_grad()
{body}
            optimizer.step()


def main(net, loader):
    net = DDP(net)
    m = Base()
    m.net = net
    m.criterion = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    m.fit(loader, opt)
"""

LOSSES_OF_ONE_FORWARD = """\
            outputs, losses = self.forward(data, target)
            for loss in losses:
                loss.backward()"""

MICRO_BATCHES = """\
            for chunk, part in zip(data.chunk(4), target.chunk(4)):
                outputs, losses = self.forward(chunk, part)
                (losses[0] / 4).backward()"""


def _gl006(body: str) -> list[int]:
    return lines_of("GL006", TRAINER.format(body=body))


def test_losses_of_one_forward_backpropagated_in_a_loop_are_no_micro_batches() -> None:
    assert _gl006(LOSSES_OF_ONE_FORWARD) == []


def test_a_forward_per_pass_through_ddp_is_still_reported() -> None:
    assert _gl006(MICRO_BATCHES) == [17]
