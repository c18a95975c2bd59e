"""A `@contextlib.contextmanager` helper enters, for the `with` body, the contexts its `yield` runs in
(`analysis/context_helpers.py`). Lockbox 17's justgrpo switched DDP sync off through
`with dist.ddp_sync(model, sync=(accum_idx == N - 1)):` of utils/distributed.py, and the micro-batches were
said to all-reduce (a GL006 false alarm): the helper was read as an opaque call that entered nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.engine import analyse_text
from support import project_tree

HELPERS = """\
    import contextlib

    import torch


    @contextlib.contextmanager
    def ddp_sync(module, sync):
        if sync:
            yield
        else:
            with module.no_sync():
                yield


    @contextlib.contextmanager
    def never_sync(module):
        with module.no_sync():
            yield


    @contextlib.contextmanager
    def timed(name):
        yield


    @contextlib.contextmanager
    def frozen():
        with torch.no_grad():
            yield
"""

TRAIN = """\
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    {imports}


    def train(model, loader, accum=4):
        model = DDP(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for i, x in enumerate(loader):
            with {context}:
                loss = model(x).mean() / accum
                loss.backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
"""


def _codes(tmp_path: Path, context: str, same_file: bool) -> set[str]:
    if same_file:
        text = TRAIN.format(imports="", context=context) + "\n" + HELPERS.replace("import contextlib", "import contextlib\n")
        root = project_tree(tmp_path, {"train.py": text})
    else:
        root = project_tree(tmp_path, {"helpers.py": HELPERS,
                                       "train.py": TRAIN.format(imports="from helpers import ddp_sync, timed, frozen",
                                                                context=context)})
    path = root / "train.py"
    return {d.code for d in analyse_text(path.read_text(), str(path)).diagnostics}


@pytest.mark.parametrize("same_file", [True, False])
@pytest.mark.parametrize(("context", "gl006"), [
    ("ddp_sync(model, sync=(i + 1) % accum == 0)", False),  # sync off on the micro-batches that do not step
    ("timed('step')", True),  # enters nothing: every micro-batch all-reduces
])
def test_sync_switched_by_a_helper(tmp_path: Path, context: str, gl006: bool, same_file: bool) -> None:
    assert ("GL006" in _codes(tmp_path, context, same_file)) is gl006


def test_helper_entering_no_grad_runs_its_body_without_graph(tmp_path: Path) -> None:
    """`with frozen(): loss = ...; loss.backward()`: the loss has no graph; no accumulation is read there."""
    found = _codes(tmp_path, "frozen()", same_file=False)
    assert not found & {"GL003", "GL006"}
