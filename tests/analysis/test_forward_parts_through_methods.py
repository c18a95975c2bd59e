"""The parts of a module's result when its `forward` returns what another method of its class returns
(icefall's HuBERT: `return self.compute_loss(...)`, a tuple `loss, sample_size, logging_output` whose log
holds `.item()` numbers), also when the model may be wrapped (`if world_size > 1: model = DDP(model)`: DDP's
forward runs the module's). Before, that forward was not run for its parts, each unpacked part was taken to
hold the forward's graph, and the log kept in a running total was a certain GL008 (peacock-asr's vendored
icefall, lockbox 18). When the parts cannot be seen (the method is past the reading depth), which part holds
the graph is an assumption: `possible`, not `certain`."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

TEXT = """\
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Hubert(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, source):
        x = self.proj(source)
        return self.compute_loss(x)

    def compute_loss(self, logits):
        loss = F.cross_entropy(logits, logits.argmax(-1))
        logging_output = {{"loss": {logged}}}
        return loss, logits.size(0), logging_output


def compute_loss(model, batch):
    loss, num, logging_output = model(batch)
    info = {{"frames": num}}
    for key in logging_output:
        info[key] = logging_output[key]
    return loss, info


def train(loader, world_size):
    model = Hubert()
    {wrap}
    opt = torch.optim.Adam(model.parameters())
    history = []
    for batch in loader:
        loss, loss_info = compute_loss(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(loss_info)
"""

WRAPS = ["pass", "if world_size > 1:\n        model = DDP(model)"]


@pytest.mark.parametrize("wrap", WRAPS)
@pytest.mark.parametrize(("logged", "gl008"), [("loss.item()", False), ("loss.detach()", False), ("loss", True)])
def test_log_returned_through_another_method(wrap: str, logged: str, gl008: bool) -> None:
    found = [d for d in analyse_text(TEXT.format(logged=logged, wrap=wrap), "train.py").diagnostics
             if d.code == "GL008"]
    assert bool(found) is gl008
    if found:
        assert found[0].line == TEXT.format(logged=logged, wrap=wrap).splitlines().index(
            "        history.append(loss_info)") + 1


def _deep(levels: int) -> str:
    """The same model, its `forward` returning through a chain of `levels` methods before the tuple."""
    chain = "".join(f"    def step{i}(self, logits):\n        return self.step{i + 1}(logits)\n\n" for i in range(levels))
    text = TEXT.format(logged="loss.item()", wrap="pass")
    text = text.replace("        return self.compute_loss(x)\n", "        return self.step0(x)\n\n" + chain.rstrip("\n") + "\n")
    return text.replace("    def compute_loss(self, logits):", f"    def step{levels}(self, logits):")


def test_parts_past_the_reading_depth_are_assumed() -> None:
    """Past the reading depth the log's parts are not seen: a report on them rests on an assumption."""
    shallow = [d for d in analyse_text(_deep(1), "train.py").diagnostics if d.code == "GL008"]
    assert not shallow
    deep = [d for d in analyse_text(_deep(7), "train.py").diagnostics if d.code == "GL008"]
    assert deep and all(d.certainty.value == "possible" for d in deep)
