"""GL004's runtime anchor (`runtime/gates.py`) when the step's condition only reads a flag: the flag is
followed to where it is computed, as the static side anchors it, in the same function or through the
argument the calling frame passed for it."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gradcheck_lint.runtime.guard import disable, enable  # noqa: E402
from support import parse_expectations  # noqa: E402

HEAD = '''\
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batches = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(10)]
'''

PROGRAMS = {
    "flag_in_the_same_function": HEAD + '''
for i, (x, y) in enumerate(batches):
    (nn.functional.mse_loss(model(x), y) / 3).backward()
    update = i % 3 == 0  # expect: GL004
    if update:
        opt.step()
        opt.zero_grad()
''',
    "flag_passed_by_keyword_to_a_helper": HEAD + '''

def train_batch(x, y, update=True):
    (nn.functional.mse_loss(model(x), y) / 3).backward()
    if update:
        opt.step()
        opt.zero_grad()


count = 0
for x, y in batches:
    update = count == 0  # expect: GL004
    train_batch(x, y, update=update)
    count = 3 if update else count
    count -= 1
''',
    "condition_passed_positionally_to_a_method": HEAD + '''

class Trainer:
    def batch(self, x, y, last):
        (nn.functional.mse_loss(model(x), y) / 3).backward()
        if not last:
            return
        opt.step()
        opt.zero_grad()

    def batch_then_step(self, x, y, due):
        self.batch(x, y, due)


trainer = Trainer()
for i, (x, y) in enumerate(batches):
    trainer.batch_then_step(x, y, i % 3 == 0)  # expect: GL004
''',
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_flag_gating_the_step_anchors_where_it_is_computed(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.py"
    source = PROGRAMS[name]
    path.write_text(source, encoding="utf-8")
    expected = parse_expectations(source)
    enable(mode="record")
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        report = disable()
    assert {(f.line, f.code) for f in report} == expected, [f"{f.line}: {f.code} {f.message}" for f in report]
