"""A graph built once before a loop whose every iteration backpropagates through it: the first backward frees what
the graph saved, so the second raises "Trying to backward through the graph a second time", whatever the step
changed in place (MMY_YSL_LLM's deep supervision, lockbox 40: an embedding, which saves its indices and not its
weight, was reported with the in-place error instead). GL009 says so, and reports it also where the layer saves none
of the parameters the step changed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

TRAIN = """
import torch
from torch import nn

torch.manual_seed(0)
embedding = nn.{layer}
head = nn.Linear(8, 1)
optimizer = torch.optim.SGD([*embedding.parameters(), *head.parameters()], lr=0.05)
for ids in {data}:
    {before}
    for k in range(3):
        {inside}
        loss = head(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward({retain})
        optimizer.step()
"""

EMBED = {"layer": "Embedding(20, 8)", "data": "torch.randint(0, 20, (4, 6))"}


def _source(**parts: str) -> str:
    defaults = {"before": "x = embedding(ids)", "inside": "pass", "retain": ""}
    return textwrap.dedent(TRAIN.format(**{**EMBED, **defaults, **parts}))


def _found(source: str) -> list[tuple[str, int, str]]:
    return [(d.code, d.span.line, d.message) for d in check_source(source, "t.py", settings=Settings.default())]


def _raises(source: str) -> str:
    run = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=120)
    return run.stderr.strip().splitlines()[-1] if run.returncode else ""


@pytest.mark.parametrize("layer", [EMBED, {"layer": "Linear(6, 8)", "data": "torch.randn(4, 5, 6)"}])
def test_a_graph_built_before_the_loop_of_its_backward_passes_raises_on_the_second(layer: dict[str, str]) -> None:
    source = textwrap.dedent(TRAIN.format(**{**layer, "before": "x = embedding(ids)", "inside": "pass", "retain": ""}))
    assert "backward through the graph a second time" in _raises(source)
    found = _found(source)
    assert [(c, line) for c, line, _m in found] == [("GL009", 15)]
    assert 'raises "Trying to backward through the graph a second time"' in found[0][2]
    assert "loop at line 11" in found[0][2]


def test_rebuilt_in_each_iteration_or_kept_by_retain_graph_it_runs() -> None:
    inside = _source(before="pass", inside="x = embedding(ids)")
    assert _raises(inside) == "" and _found(inside) == []
    retained = _source(retain="retain_graph=True")  # an embedding saves its indices only: the step breaks nothing
    assert _raises(retained) == "" and _found(retained) == []
