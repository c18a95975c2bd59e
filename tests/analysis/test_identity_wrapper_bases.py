"""A project class that extends an identity wrapper of the catalogue (`DataParallel(module)` is the module)
and defines no `forward` of its own is, constructed, what its base makes of its arguments: first-order-
model's `DataParallelWithCallback(DataParallel)` wraps its full models under `torch.cuda.is_available()`,
and the wrapped full model's `forward` is still the one that runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

PARALLEL = """\
from torch.nn.parallel.data_parallel import DataParallel


class DataParallelWithCallback(DataParallel):
    def replicate(self, module, device_ids):
        return super().replicate(module, device_ids)
"""
TRAIN = """\
import torch
from torch import nn

from parallel import DataParallelWithCallback


class DiscriminatorFullModel(nn.Module):
    def __init__(self, generator, discriminator):
        super().__init__()
        self.generator = generator
        self.discriminator = discriminator

    def forward(self, x, fake):
        return ((1 - self.discriminator(x)) ** 2 + self.discriminator(fake{detach}) ** 2).mean()


generator, discriminator = nn.Linear(4, 4), nn.Linear(4, 1)
optimizer_generator = torch.optim.Adam(generator.parameters(), lr=1e-3)
optimizer_discriminator = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
discriminator_full = DiscriminatorFullModel(generator, discriminator)
if torch.cuda.is_available():
    discriminator_full = DataParallelWithCallback(discriminator_full, device_ids=[0])
for x in torch.randn(4, 2, 4):
    loss = (generator(x) ** 2).mean()
    loss.backward()
    optimizer_generator.step()
    optimizer_generator.zero_grad()
    optimizer_discriminator.zero_grad()
    loss = discriminator_full(x, generator(x))
    loss.backward()
    optimizer_discriminator.step()
    optimizer_discriminator.zero_grad()
"""


@pytest.mark.parametrize(("detach", "expected"), [(".detach()", []), ("", [(26, "GL005")])])
def test_a_data_parallel_subclass_wraps_the_module_it_is_given(tmp_path: Path, detach: str,
                                                                expected: list[tuple[int, str]]) -> None:
    root = project_tree(tmp_path, {"parallel.py": PARALLEL, "train.py": TRAIN.format(detach=detach)})
    found = lint_files([str(root / "train.py"), str(root / "parallel.py")], Settings.default())
    assert sorted((d.line, d.code) for d in found) == expected
