"""A tensor a module's `forward` builds with a torch function at each call (`aligned = torch.stack(feats, dim=1)`) and
hands to a submodule that writes into it in place: the submodule's write keeps one call's graph in an object that call
made (FGVSRR's fusion block, lockbox 33: six certain GL008 on `aligned_feat[:, 0], h, c = self.lstm(...)`). `torch.stack`
is a function of the torch module, not a method of an object that may hand back one it keeps. A tensor the model keeps
as an attribute, written so, still outlives the loop."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

MODEL = """\
import torch
import torch.nn as nn


class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)

    def forward(self, x, h, c):
        y = self.conv(x)
        return y, y, y


class Fusion(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = Cell()
        self.out = nn.Conv2d(4, 4, 1)

    def forward(self, aligned, h, c):
        aligned[:, 0], h, c = self.cell(aligned[:, 0].clone(), h, c)
        return self.out(aligned[:, 0]), h, c


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.align = nn.Conv2d(4, 4, 1)
        self.fusion = Fusion()
        self.memory = torch.zeros(2, 3, 4, 5, 5)

    def forward(self, x):
{build}
        out, h, c = self.fusion({handed}, None, None)
        return out


def train(model, optimizer, loader):
    for x, y in loader:
        out = model(x)
        loss = ((out - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


model = Net()
opt = torch.optim.Adam(model.parameters())
train(model, opt, [(torch.randn(2, 3, 4, 5, 5), torch.randn(2, 4, 5, 5))])
"""

STACKED = """\
        aligned = []
        for i in range(x.size(1)):
            aligned.append(self.align(x[:, i]))
        aligned = torch.stack(aligned, dim=1)"""
BUILT = {
    "stack": STACKED,
    "cat": "        aligned = torch.cat([self.align(x[:, 0]), self.align(x[:, 1])], dim=1)",
}
# `index_add_` writes into the model's kept tensor and returns it: the object outlives the call
KEPT = STACKED.replace("aligned = torch.stack(aligned, dim=1)",
                       "aligned = self.memory.index_add_(1, idx, torch.stack(aligned, dim=1))")


def codes(build: str, handed: str = "aligned") -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(MODEL.format(build=build, handed=handed))]


@pytest.mark.parametrize("build", BUILT.values(), ids=BUILT.keys())
def test_a_tensor_a_torch_function_builds_at_each_forward_holds_one_calls_graph(build: str) -> None:
    assert codes(build) == []


def test_the_models_kept_tensor_written_so_still_outlives_the_loop() -> None:
    found = codes(KEPT)
    line = next(i for i, text in enumerate(MODEL.splitlines(), 1) if "aligned[:, 0], h, c =" in text)
    assert (line, "GL008") in found
