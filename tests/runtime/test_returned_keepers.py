"""GL008's second keeper at runtime (`runtime/returned_keepers.py`): a function's in-place running total
keeps its batches' graphs while it runs, and the caller that stores what it returns keeps them after: the
guard reports both statements, as the static side does, and only the first when the caller drops the result."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gradcheck_lint import check_source  # noqa: E402
from gradcheck_lint.runtime.guard import disable, enable  # noqa: E402
from support import parse_expectations  # noqa: E402

TRAIN = '''\
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Linear(4, 2)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
loader = [(torch.randn(8, 4), torch.randn(8, 2)) for _ in range(6)]


def train(loader):
    total = torch.tensor(0.0)
    for x, t in loader:
        optimizer.zero_grad()
        loss = ((net(x) - t) ** 2).mean()
        loss.backward()
        optimizer.step()
        total += loss * x.shape[0]  # expect: GL008
    return total / 48

'''

PROGRAMS = {
    "kept_in_a_dict": TRAIN + '''
history = {}
for epoch in range(5):
    history[epoch] = train(loader)  # expect: GL008
''',
    "appended_to_a_list": TRAIN + '''
history = []
for epoch in range(5):
    history.append(train(loader))  # expect: GL008
''',
    "printed_and_dropped": TRAIN + '''
for epoch in range(5):
    print(train(loader).item())
''',
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_caller_keeping_a_returned_total_is_reported_where_it_stores_it(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.py"
    path.write_text(PROGRAMS[name], encoding="utf-8")
    expected = parse_expectations(PROGRAMS[name])
    assert {(d.line, d.code) for d in check_source(PROGRAMS[name], str(path))} == expected  # the static side's anchors
    enable(mode="record")
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        report = disable()
    found = {(f.line, f.code) for f in report}
    assert found == expected, [f"{f.line}: {f.code} {f.message}" for f in report]
