"""A slot written only while its key is absent (`if task_id not in task_map: task_map[task_id] = v`) is written once
per key: whether the iterations bring a new key each time or one key, written once, is not read, so a graph kept there
across the iterations rests on an assumption (possible), never certain (HPNs' per-task maps of the ids a task selected,
lockbox 35, kind 3; found after the opening). The same store under another test is certain."""

from __future__ import annotations

import pytest

from gradcheck_lint.api import check_source

LOOP = """\
import torch

model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
task_map = {}
for task_id in range(3):
    for x in torch.randn(16, 4).split(4):
        opt.zero_grad()
        scores = model(x)
        GUARD
            task_map[task_id] = scores.sum(0)
        loss = scores.mean()
        loss.backward()
        opt.step()
"""


def _gl008(text: str) -> list[tuple[int, str]]:
    return [(d.line, d.certainty.value) for d in check_source(text, "train.py") if d.code == "GL008"]


@pytest.mark.parametrize("guard", ["if task_id not in task_map:", "if task_id not in task_map.keys():"])
def test_a_store_guarded_by_the_keys_absence_is_an_assumption(guard: str) -> None:
    assert _gl008(LOOP.replace("GUARD", guard)) == [(11, "possible")]


def test_the_same_store_under_another_test_is_certain() -> None:
    assert _gl008(LOOP.replace("GUARD", "if task_id >= 0:")) == [(11, "certain")]
