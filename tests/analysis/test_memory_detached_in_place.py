"""GL008 on a state a module keeps across batches (a TGN memory: `self.memory[src] = updater(msg, self.memory[src])`)
is not reported when the training loop cuts it from its graph in place each iteration through the module's own
method (relbench's `memory.detach()`, which runs `self.memory.detach_()`). Without that call it keeps every
iteration's graph and is reported."""

import pytest

from support import lines_of

LOOP = """
import torch


class Memory(torch.nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.register_buffer("memory", torch.zeros(n, d))
        self.updater = torch.nn.GRUCell(d, d)

    def detach(self):
        {detach}

    def update_state(self, src, msg):
        self.memory[src] = self.updater(msg, self.memory[src])


def train(loader, model, memory):
    optimizer = torch.optim.Adam(list(model.parameters()) + list(memory.parameters()))
    for src, msg, y in loader:
        optimizer.zero_grad()
        loss = (model(memory.memory[src]) - y).pow(2).mean()
        memory.update_state(src, msg)
        loss.backward()
        optimizer.step()
        memory.detach()


def main(loader):
    train(loader, torch.nn.Linear(8, 1), Memory(100, 8))
"""


@pytest.mark.parametrize("detach, expected", [("self.memory.detach_()", []), ("pass", [15])], ids=["detached", "kept"])
def test_a_memory_detached_in_place_by_its_module_each_batch(detach: str, expected: list[int]) -> None:
    assert lines_of("GL008", LOOP.format(detach=detach)) == expected
