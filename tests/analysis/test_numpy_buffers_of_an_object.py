"""GL008: an attribute every binding of which in its class is a NumPy array (`self.v_buf = np.zeros(size)` in
`__init__`, `self.adv_buf = (self.adv_buf - self.adv_buf.mean()) / self.adv_buf.std()` later) converts what is
stored into it to numbers: no graph is kept (RLeMPC's trajectory buffers: six certain false alarms of lockbox 34,
read). A buffer of tensors keeps the graph of what is stored into it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gradcheck_lint.api import check_source

SCRIPT = """\
import numpy as np
import torch


class Buffer:
    def __init__(self, size):
        self.v_buf = MAKE
        self.ptr = 0

    def add(self, v):
        self.v_buf[self.ptr] = v
        self.ptr += 1

    def finish(self):
        self.v_buf = (self.v_buf - self.v_buf.mean()) / (self.v_buf.std() + 1e-8)


def run(steps):
    vf = torch.nn.Linear(3, 1)
    pi = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(pi.parameters(), lr=1e-3)
    buf = Buffer(steps)
    for t in range(steps):
        obs = torch.randn(3)
        v = vf(obs)[0]
        buf.add(VALUE)
        loss = pi(obs).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    buf.finish()
    print(type(buf.v_buf).__name__)


run(4)
"""


@pytest.mark.parametrize("make, value, kept, runs", [
    ("np.zeros(size, dtype=np.float32)", "v.detach().numpy()", False, True),
    ("np.zeros(size, dtype=np.float32)", "v", False, True),  # NumPy stores the number (and warns)
    ("torch.zeros(size)", "v", True, True),
])
def test_a_numpy_buffer_of_an_object_keeps_no_graph(tmp_path: Path, make: str, value: str, kept: bool,
                                                     runs: bool) -> None:
    text = SCRIPT.replace("MAKE", make).replace("VALUE", value)
    found = [(d.code, d.line) for d in check_source(text, "train.py")]
    assert (("GL008", 11) in found or ("GL008", 26) in found) is kept, found
    path = tmp_path / "train.py"
    path.write_text(text)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert (run.returncode == 0) is runs, run.stderr
