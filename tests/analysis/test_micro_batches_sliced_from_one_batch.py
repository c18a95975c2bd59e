"""GL008: what a loop over micro-batches sliced from one batch keeps (`while start < bs: ... data[:, start:end]`,
`for i in range(0, n, mb): ... x[i:i + mb]`) is bounded by the batch's micro-batches when the loop around it, which
fetches the batches, makes it afresh or rewrites its slots from the first: DARTS' recurrent search keeps one hidden
state per micro-batch slot (`hidden[s_id]`, `s_id = 0` at each batch), detached at the start of each micro-batch
(AngleNAS and Beta-DARTS, four certain false alarms of the read sets; an architecture step in each micro-batch). Kept across batches, it grows: reported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gradcheck_lint.api import check_source

SCRIPT = """\
import torch


def get_batch(source, i, bs):
    return source[i:i + bs]


def train(model, optimizer, arch, arch_opt, source, bs, small):
    hidden = [torch.zeros(small, 4) for _ in range(bs // small)]
    KEPT_BEFORE
    i = 0
    while i < source.size(0) - bs:
        data = get_batch(source, i, bs)
        KEPT_PER_BATCH
        optimizer.zero_grad()
        start, end, s_id = 0, small, 0
        while start < bs:
            cur = data[start:end]
            arch_opt.zero_grad()
            arch(cur).pow(2).mean().backward()
            arch_opt.step()
            hidden[s_id] = hidden[s_id].detach()
            out = model(torch.cat([cur, hidden[s_id]], dim=1))
            hidden[s_id] = out
            loss = out.pow(2).mean() * small / bs
            losses.append(loss)
            loss.backward()
            s_id += 1
            start = end
            end = start + small
        optimizer.step()
        i += bs
    return losses


model, arch = torch.nn.Linear(8, 4), torch.nn.Linear(4, 1)
train(model, torch.optim.SGD(model.parameters(), lr=0.01), arch, torch.optim.Adam(arch.parameters()), torch.randn(64, 4),
      8, 4)
"""


@pytest.mark.parametrize("before, per_batch, kept", [
    ("pass", "losses = []", False),
    ("losses = []", "pass", True),
])
def test_what_a_loop_over_slices_of_one_batch_keeps(tmp_path: Path, before: str, per_batch: str, kept: bool) -> None:
    text = SCRIPT.replace("KEPT_BEFORE", before).replace("KEPT_PER_BATCH", per_batch)
    found = [(d.code, d.line) for d in check_source(text, "train.py")]
    assert ("GL008", 22) not in found and ("GL008", 24) not in found, found  # the hidden-state slots
    assert (("GL008", 26) in found) is kept, found  # the list of losses
    path = tmp_path / "train.py"
    path.write_text(text)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
