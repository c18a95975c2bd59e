"""A slot an index held in a name selects (`hidden[s_id]`) holds what was last stored there, while neither the
container nor the index has changed since.

AngleNAS's AWD-LSTM search (lockbox 35) keeps one recurrent hidden state per micro-batch, `hidden[s_id]`, and
detaches each at the start of its micro-batch: `hidden[s_id] = repackage_hidden(hidden[s_id])`, then
`out, hidden[s_id] = model(x, hidden[s_id])`. A store under an index that is no literal was joined into the whole
buffer, and a read gave the join: the detached state still held the previous window's graph, so the backward read as
one through a graph the step had changed (GL009). Without the detach, the same loop raises at the second window."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gradcheck_lint.api import check_source

SCRIPT = """\
import torch


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def train(model, optimizer, batches, n_small, small):
    hidden = [model.init_hidden(small) for _ in range(n_small)]
    for data in batches:
        optimizer.zero_grad()
        start, s_id = 0, 0
        while start < data.size(1):
            cur = data[:, start:start + small]
            DETACH
            out, hidden[s_id] = model(cur, hidden[s_id])
            loss = out.pow(2).mean() / n_small
            loss.backward()
            s_id += 1
            start += small
        optimizer.step()


class RNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(3, 4)

    def init_hidden(self, bs):
        return torch.zeros(1, bs, 4)

    def forward(self, x, h):
        return self.rnn(x, h)


m = RNN()
train(m, torch.optim.SGD(m.parameters(), lr=0.1), [torch.randn(5, 8, 3)] * 3, 4, 2)
print("ran")
"""


@pytest.mark.parametrize("detach, expected, runs", [
    ("hidden[s_id] = repackage_hidden(hidden[s_id])", [], True),
    ("pass", [("GL009", 20)], False),
])
def test_a_slot_read_under_the_index_it_was_stored_under(tmp_path: Path, detach: str, expected: list, runs: bool) -> None:
    text = SCRIPT.replace("DETACH", detach)
    assert [(d.code, d.line) for d in check_source(text, "train.py")] == expected
    path = tmp_path / "train.py"
    path.write_text(text)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert (run.stdout.split() == ["ran"]) is runs, run.stderr


def test_a_changed_index_reads_the_whole_buffer_again() -> None:
    # after `s_id += 1` the slot read is another one: what the buffer holds anywhere (the graph stored before)
    text = SCRIPT.replace("DETACH", "hidden[s_id] = repackage_hidden(hidden[s_id])\n            s_id += 0")
    assert [(d.code, d.line) for d in check_source(text, "train.py")] == [("GL009", 21)]
