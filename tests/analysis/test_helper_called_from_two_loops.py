"""A backward in a helper of another file that two calls of the checked file run is reported at each.

TinyViT's main.py runs `loss_scaler(...)` (a class of utils.py that backpropagates and steps) from two
training loops (plain and distillation), both under a DDP model with no `no_sync`. Once that class was
followed (cf907c0), its backward was one node for both loops, and the finding at that node was reported
once, at the call that last entered the helper: main.py:232 was lost. A finding now knows the calls that
ran its event and is reported at the innermost of them in the checked file.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree

SCALER = """\
    class Scaler:
        def __call__(self, loss, optimizer, update_grad=True):
            loss.backward()
            if update_grad:
                optimizer.step()
"""

MAIN = """\
    import contextlib

    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    from scaler import Scaler


    def train_plain(model, optimizer, loader, accum, loss_scaler):
        for idx, (x, y) in enumerate(loader):
            with {sync}:
                loss = (model(x) - y).pow(2).mean() / accum
                loss_scaler(loss, optimizer, update_grad=(idx + 1) % accum == 0)
            if (idx + 1) % accum == 0:
                optimizer.zero_grad()


    def train_distill(model, teacher, optimizer, loader, accum, loss_scaler):
        for idx, (x, y) in enumerate(loader):
            with {sync}:
                loss = (model(x) - teacher(x)).pow(2).mean() / accum
                loss_scaler(loss, optimizer, update_grad=(idx + 1) % accum == 0)
            if (idx + 1) % accum == 0:
                optimizer.zero_grad()


    def main(net, teacher, loader, accum, distill):
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        model = DDP(net)
        loss_scaler = Scaler()
        if distill:
            train_distill(model, teacher, optimizer, loader, accum, loss_scaler)
        else:
            train_plain(model, optimizer, loader, accum, loss_scaler)
"""

NO_SYNC = "model.no_sync() if (idx + 1) % accum else contextlib.nullcontext()"


def _findings(root: Path, sync: str) -> list[tuple[int, str, str]]:
    project_tree(root, {"scaler.py": SCALER, "main.py": MAIN.format(sync=sync)})
    path = root / "main.py"
    report = analyse_text(path.read_text(), str(path), Settings.default())
    return [(d.line, d.code, d.message) for d in report.diagnostics]


def test_each_loop_that_runs_the_helper_is_reported(tmp_path: Path) -> None:
    found = _findings(tmp_path, "contextlib.nullcontext()")
    calls = [i for i, text in enumerate(textwrap.dedent(MAIN).splitlines(), 1) if "loss_scaler(loss" in text]
    assert len(calls) == 2
    assert [(line, code) for line, code, _ in found] == [(calls[0], "GL006"), (calls[1], "GL006")]
    # each names the helper's backward in the other file
    assert all("`loss.backward()` at scaler.py:3" in message for _, _, message in found)


def test_silent_when_both_loops_skip_the_sync(tmp_path: Path) -> None:
    assert _findings(tmp_path, NO_SYNC) == []
