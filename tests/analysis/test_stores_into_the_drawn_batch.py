"""A store into an object the loop draws afresh each iteration, made in a function the loop calls, through a parameter
or a local unpacked from one (`g, labels = data; g.ndata["feat"] = ...` in a `forward` called with the batch): the
object goes with its iteration, so the graph stored in it does not outlive the loop (kg-subg-link's graph classifier,
lockbox 35: three certain GL008 of kind 3, found after the opening). The same store into an object made once before
the loop keeps each iteration's graph: still reported, and PyTorch raises when the next iteration backpropagates
through the graph the previous one freed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gradcheck_lint.api import check_source

LOOP = """\
import torch
from torch.utils.data import DataLoader


class Graph:
    def __init__(self, n):
        self.ndata = {"feat": torch.randn(n, 4), "ratio": torch.randn(n, 4), "id": torch.randint(0, 3, (n,))}


def collate(samples):
    return Graph(len(samples)), torch.zeros(len(samples))


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.aug = torch.nn.Parameter(torch.randn(4, 4))
        self.out = torch.nn.Linear(4, 1)

    def forward(self, data):
        g, rel_labels = data
        g.ndata["feat"] = g.ndata["feat"] + torch.mm(g.ndata["ratio"], self.aug)
        head_ids = (g.ndata["id"] == 1).nonzero().squeeze(1)
        return self.out(g.ndata["feat"][head_ids]).mean()


model = Classifier()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loader = DataLoader(list(range(64)), batch_size=8, collate_fn=collate)
shared = collate(list(range(8)))
for epoch in range(2):
    for batch in loader:
        optimizer.zero_grad()
        loss = (model(BATCH) - 1).pow(2)
        loss.backward()
        optimizer.step()
print("trained")
"""

STORE = 22  # the line of `g.ndata["feat"] = ...`


def _gl008(text: str) -> list[int]:
    return [d.line for d in check_source(text, "train.py") if d.code == "GL008"]


def _run(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "train.py"
    path.write_text(text)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)


def test_a_store_into_the_batch_the_loop_draws_is_not_reported(tmp_path: Path) -> None:
    text = LOOP.replace("BATCH", "batch")
    assert text.splitlines()[STORE - 1].strip().startswith('g.ndata["feat"] =')
    assert _gl008(text) == []
    run = _run(tmp_path, text)
    assert run.returncode == 0 and "trained" in run.stdout, run.stderr


def test_the_same_store_into_an_object_made_once_is_reported(tmp_path: Path) -> None:
    text = LOOP.replace("BATCH", "shared")
    assert _gl008(text) == [STORE]
    run = _run(tmp_path, text)  # the second iteration backpropagates through the first one's graph, kept in the store
    assert run.returncode != 0 and "backward through the graph a second time" in run.stderr
